// ember's C++ extension API, core: c10's value types, at::Tensor, the ATen functions extensions
// call, and the pybind11 casters that carry ember tensors across the Python boundary.
//
// There is no C++ tensor library behind this header. An at::Tensor holds a reference to the
// Python ember.Tensor (a pybind11::object); its metadata accessors read the Python object's
// fields, its data_ptr is the storage's address, and every operator and factory calls back into
// ember's dispatcher (ember.ops.aten.<op>.<overload>), so autograd, dispatch modes and the
// profiler see a C++ extension's ops as they see Python's. The calls hold the GIL, which every
// kernel entered from Python has. What exists is listed in ember/include/README.md.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <complex>
#include <functional>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

// Bumped whenever the layout or the Python-side contract of these headers changes; an extension
// built against another version refuses to load (ember/_library/cpp.py: HEADER_VERSION).
#define EMBER_EXTENSION_HEADER_VERSION 1

namespace py = pybind11;  // as PyTorch's torch/csrc/utils/pybind.h

#define C10_LIKELY(x) __builtin_expect(static_cast<bool>(x), 1)
#define C10_UNLIKELY(x) __builtin_expect(static_cast<bool>(x), 0)
#define C10_UNUSED __attribute__((__unused__))
#define C10_STRINGIZE_IMPL(x) #x
#define C10_STRINGIZE(x) C10_STRINGIZE_IMPL(x)
#define C10_CONCATENATE_IMPL(a, b) a##b
#define C10_CONCATENATE(a, b) C10_CONCATENATE_IMPL(a, b)
#define C10_UID __COUNTER__
#define C10_API
#define TORCH_API
#if defined(__CUDACC__)
#define C10_HOST_DEVICE __host__ __device__
#else
#define C10_HOST_DEVICE
#endif

// Everything below is hidden: each extension gets its own copy (its own caches of Python
// objects), and two extensions loaded into one process never bind to each other's symbols.
namespace c10 __attribute__((visibility("hidden"))) {

// -- messages ------------------------------------------------------------------------------------
namespace detail {
inline void str_into(std::ostringstream&) {}
template <typename T, typename... Rest>
inline void str_into(std::ostringstream& ss, const T& v, const Rest&... rest) {
  ss << v;
  str_into(ss, rest...);
}
}  // namespace detail

// c10::str: concatenates its arguments with operator<< (TORCH_CHECK's message).
template <typename... Args>
inline std::string str(const Args&... args) {
  std::ostringstream ss;
  detail::str_into(ss, args...);
  return ss.str();
}

// c10::Error becomes Python's RuntimeError; the subclasses become the Python exception their name
// says (as PyTorch's TORCH_CHECK_VALUE, TORCH_CHECK_INDEX ...).
class Error : public std::exception {
 public:
  explicit Error(std::string msg) : msg_(std::move(msg)) {}
  const char* what() const noexcept override { return msg_.c_str(); }
  const std::string& msg() const { return msg_; }
  const char* what_without_backtrace() const noexcept { return msg_.c_str(); }

 private:
  std::string msg_;
};
class ValueError : public Error { using Error::Error; };
class TypeError : public Error { using Error::Error; };
class IndexError : public Error { using Error::Error; };
class NotImplementedError : public Error { using Error::Error; };

namespace detail {
inline std::string check_msg(const char* cond) {
  return c10::str("Expected ", cond, " to be true, but got false.  (Could this error message be "
                  "improved?  If so, please report an enhancement request to PyTorch.)");
}
template <typename... Args>
inline std::string check_msg(const char*, const Args&... args) {
  return c10::str(args...);
}
}  // namespace detail

// -- ArrayRef ------------------------------------------------------------------------------------
// A non-owning view of a contiguous sequence (c10::ArrayRef): the caller keeps the data alive.
template <typename T>
class ArrayRef {
 public:
  using value_type = T;
  using iterator = const T*;
  using const_iterator = const T*;
  using size_type = size_t;
  constexpr ArrayRef() : data_(nullptr), size_(0) {}
  constexpr ArrayRef(const T& one) : data_(&one), size_(1) {}
  constexpr ArrayRef(const T* data, size_t size) : data_(data), size_(size) {}
  ArrayRef(const T* begin, const T* end) : data_(begin), size_(end - begin) {}
  template <typename A>
  ArrayRef(const std::vector<T, A>& v) : data_(v.data()), size_(v.size()) {}
  constexpr ArrayRef(const std::initializer_list<T>& v)
      : data_(v.begin() == v.end() ? nullptr : v.begin()), size_(v.size()) {}
  template <size_t N>
  constexpr ArrayRef(const T (&arr)[N]) : data_(arr), size_(N) {}

  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& front() const { return data_[0]; }
  const T& back() const { return data_[size_ - 1]; }
  const T& operator[](size_t i) const { return data_[i]; }
  const T& at(size_t i) const {
    if (i >= size_) throw IndexError(c10::str("ArrayRef: invalid index Index = ", i, "; Length = ", size_));
    return data_[i];
  }
  bool equals(ArrayRef other) const {
    if (size_ != other.size_) return false;
    for (size_t i = 0; i < size_; ++i)
      if (!(data_[i] == other.data_[i])) return false;
    return true;
  }
  std::vector<T> vec() const { return std::vector<T>(data_, data_ + size_); }
  ArrayRef slice(size_t n, size_t m) const { return ArrayRef(data_ + n, m); }
  ArrayRef slice(size_t n) const { return ArrayRef(data_ + n, size_ - n); }

 private:
  const T* data_;
  size_t size_;
};
template <typename T>
inline bool operator==(ArrayRef<T> a, ArrayRef<T> b) { return a.equals(b); }
template <typename T>
inline bool operator!=(ArrayRef<T> a, ArrayRef<T> b) { return !a.equals(b); }
template <typename T>
inline std::ostream& operator<<(std::ostream& out, ArrayRef<T> list) {
  out << "[";
  for (size_t i = 0; i < list.size(); ++i) out << (i ? ", " : "") << list[i];
  return out << "]";
}
using IntArrayRef = ArrayRef<int64_t>;

template <typename T>
using optional = std::optional<T>;
using std::nullopt;
using std::make_optional;
template <typename T>
using OptionalArrayRef = std::optional<ArrayRef<T>>;
using OptionalIntArrayRef = OptionalArrayRef<int64_t>;

// -- ScalarType ----------------------------------------------------------------------------------
// The numbering is c10's (ScalarType.h), so code that stores it as an int agrees with PyTorch.
enum class ScalarType : int8_t {
  Byte = 0, Char = 1, Short = 2, Int = 3, Long = 4, Half = 5, Float = 6, Double = 7,
  ComplexHalf = 8, ComplexFloat = 9, ComplexDouble = 10, Bool = 11, QInt8 = 12, QUInt8 = 13,
  QInt32 = 14, BFloat16 = 15, Undefined = 16, NumOptions = 17
};
constexpr ScalarType kByte = ScalarType::Byte;
constexpr ScalarType kChar = ScalarType::Char;
constexpr ScalarType kShort = ScalarType::Short;
constexpr ScalarType kInt = ScalarType::Int;
constexpr ScalarType kLong = ScalarType::Long;
constexpr ScalarType kHalf = ScalarType::Half;
constexpr ScalarType kFloat = ScalarType::Float;
constexpr ScalarType kDouble = ScalarType::Double;
constexpr ScalarType kComplexHalf = ScalarType::ComplexHalf;
constexpr ScalarType kComplexFloat = ScalarType::ComplexFloat;
constexpr ScalarType kComplexDouble = ScalarType::ComplexDouble;
constexpr ScalarType kBool = ScalarType::Bool;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;

inline const char* toString(ScalarType t) {
  static const char* names[] = {"Byte", "Char", "Short", "Int", "Long", "Half", "Float", "Double",
                                "ComplexHalf", "ComplexFloat", "ComplexDouble", "Bool", "QInt8",
                                "QUInt8", "QInt32", "BFloat16", "Undefined"};
  auto i = static_cast<int>(t);
  return (i >= 0 && i <= 16) ? names[i] : "UNKNOWN_SCALAR";
}
inline std::ostream& operator<<(std::ostream& out, ScalarType t) { return out << toString(t); }
inline size_t elementSize(ScalarType t) {
  static const size_t sizes[] = {1, 1, 2, 4, 8, 2, 4, 8, 4, 8, 16, 1, 1, 1, 4, 2, 0};
  return sizes[static_cast<int>(t)];
}
inline bool isFloatingType(ScalarType t) {
  return t == kHalf || t == kFloat || t == kDouble || t == kBFloat16;
}
inline bool isComplexType(ScalarType t) {
  return t == kComplexHalf || t == kComplexFloat || t == kComplexDouble;
}
inline bool isIntegralType(ScalarType t, bool includeBool) {
  return (t >= kByte && t <= kLong) || (includeBool && t == kBool);
}

// The C++ type of each scalar type (data_ptr<T> checks T against the tensor's dtype).
template <typename T> struct CppTypeToScalarType;
#define EMBER_CPP_SCALAR(T, S) \
  template <> struct CppTypeToScalarType<T> { static constexpr ScalarType value = ScalarType::S; };
EMBER_CPP_SCALAR(uint8_t, Byte)
EMBER_CPP_SCALAR(int8_t, Char)
EMBER_CPP_SCALAR(int16_t, Short)
EMBER_CPP_SCALAR(int32_t, Int)
EMBER_CPP_SCALAR(int64_t, Long)
EMBER_CPP_SCALAR(float, Float)
EMBER_CPP_SCALAR(double, Double)
EMBER_CPP_SCALAR(std::complex<float>, ComplexFloat)
EMBER_CPP_SCALAR(std::complex<double>, ComplexDouble)
EMBER_CPP_SCALAR(bool, Bool)
#undef EMBER_CPP_SCALAR

// caffe2::TypeMeta stand-in: what Tensor::dtype() returns; compares equal to a ScalarType.
class TypeMeta {
 public:
  constexpr TypeMeta() : t_(ScalarType::Undefined) {}
  constexpr TypeMeta(ScalarType t) : t_(t) {}
  constexpr ScalarType toScalarType() const { return t_; }
  size_t itemsize() const { return elementSize(t_); }
  const char* name() const { return toString(t_); }
  friend bool operator==(TypeMeta a, TypeMeta b) { return a.t_ == b.t_; }
  friend bool operator!=(TypeMeta a, TypeMeta b) { return a.t_ != b.t_; }
  friend bool operator==(TypeMeta a, ScalarType b) { return a.t_ == b; }
  friend bool operator==(ScalarType a, TypeMeta b) { return a == b.t_; }
  friend bool operator!=(TypeMeta a, ScalarType b) { return a.t_ != b; }
  friend bool operator!=(ScalarType a, TypeMeta b) { return a != b.t_; }
  friend std::ostream& operator<<(std::ostream& out, TypeMeta m) { return out << m.t_; }

 private:
  ScalarType t_;
};
inline ScalarType typeMetaToScalarType(TypeMeta m) { return m.toScalarType(); }
inline TypeMeta scalarTypeToTypeMeta(ScalarType t) { return TypeMeta(t); }

// -- Device --------------------------------------------------------------------------------------
enum class DeviceType : int8_t { CPU = 0, CUDA = 1, Meta = 14, PrivateUse1 = 20 };
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;
constexpr DeviceType kMeta = DeviceType::Meta;
constexpr DeviceType kPrivateUse1 = DeviceType::PrivateUse1;
using DeviceIndex = int8_t;

inline const char* DeviceTypeName(DeviceType t, bool lower_case = true) {
  switch (t) {
    case DeviceType::CPU: return lower_case ? "cpu" : "CPU";
    case DeviceType::CUDA: return lower_case ? "cuda" : "CUDA";
    case DeviceType::Meta: return lower_case ? "meta" : "META";
    case DeviceType::PrivateUse1: return lower_case ? "privateuseone" : "PRIVATEUSEONE";
  }
  return "unknown";
}
inline std::ostream& operator<<(std::ostream& out, DeviceType t) { return out << DeviceTypeName(t, true); }

class Device {
 public:
  Device(DeviceType type, DeviceIndex index = -1) : type_(type), index_(index) {}
  // "cpu", "cuda", "cuda:1", "meta"
  Device(const std::string& s) : index_(-1) {
    auto colon = s.find(':');
    std::string t = s.substr(0, colon);
    if (t == "cpu") type_ = kCPU;
    else if (t == "cuda") type_ = kCUDA;
    else if (t == "meta") type_ = kMeta;
    else if (t == "privateuseone") type_ = kPrivateUse1;
    else throw Error("Expected one of cpu, cuda, meta, privateuseone device type at start of device string: " + s);
    if (colon != std::string::npos) index_ = static_cast<DeviceIndex>(std::stoi(s.substr(colon + 1)));
  }
  Device(const char* s) : Device(std::string(s)) {}
  DeviceType type() const { return type_; }
  DeviceIndex index() const { return index_; }
  bool has_index() const { return index_ != -1; }
  bool is_cuda() const { return type_ == kCUDA; }
  bool is_cpu() const { return type_ == kCPU; }
  bool is_meta() const { return type_ == kMeta; }
  void set_index(DeviceIndex i) { index_ = i; }
  std::string str() const {
    std::string s = DeviceTypeName(type_, true);
    return has_index() ? s + ":" + std::to_string(index_) : s;
  }
  bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
  bool operator!=(const Device& o) const { return !(*this == o); }

 private:
  DeviceType type_;
  DeviceIndex index_;
};
inline std::ostream& operator<<(std::ostream& out, const Device& d) { return out << d.str(); }

enum class Layout : int8_t { Strided = 0 };
constexpr Layout kStrided = Layout::Strided;
enum class MemoryFormat : int8_t { Contiguous = 0, Preserve = 1, ChannelsLast = 2, ChannelsLast3d = 3 };

// -- Scalar --------------------------------------------------------------------------------------
class Scalar {
 public:
  enum class Tag { Double, Long, Bool, ComplexDouble };
  Scalar() : Scalar(int64_t(0)) {}
  template <typename T, typename std::enable_if<std::is_integral<T>::value && !std::is_same<T, bool>::value, int>::type = 0>
  Scalar(T v) : tag_(Tag::Long) { v_.i = static_cast<int64_t>(v); }
  template <typename T, typename std::enable_if<std::is_floating_point<T>::value, int>::type = 0>
  Scalar(T v) : tag_(Tag::Double) { v_.d = static_cast<double>(v); }
  Scalar(bool v) : tag_(Tag::Bool) { v_.i = v; }
  template <typename T>
  Scalar(std::complex<T> v) : tag_(Tag::ComplexDouble) { v_.z[0] = v.real(); v_.z[1] = v.imag(); }

  bool isFloatingPoint() const { return tag_ == Tag::Double; }
  bool isIntegral(bool includeBool) const { return tag_ == Tag::Long || (includeBool && tag_ == Tag::Bool); }
  bool isBoolean() const { return tag_ == Tag::Bool; }
  bool isComplex() const { return tag_ == Tag::ComplexDouble; }
  Tag tag() const { return tag_; }
  double toDouble() const { return tag_ == Tag::Double ? v_.d : tag_ == Tag::ComplexDouble ? v_.z[0] : double(v_.i); }
  int64_t toLong() const { return tag_ == Tag::Double ? int64_t(v_.d) : tag_ == Tag::ComplexDouble ? int64_t(v_.z[0]) : v_.i; }
  float toFloat() const { return float(toDouble()); }
  int toInt() const { return int(toLong()); }
  bool toBool() const { return tag_ == Tag::Double ? v_.d != 0 : tag_ == Tag::ComplexDouble ? (v_.z[0] != 0 || v_.z[1] != 0) : v_.i != 0; }
  std::complex<double> toComplexDouble() const {
    return tag_ == Tag::ComplexDouble ? std::complex<double>(v_.z[0], v_.z[1]) : std::complex<double>(toDouble(), 0);
  }
  template <typename T> T to() const;
  Scalar operator-() const {
    switch (tag_) {
      case Tag::Double: return Scalar(-v_.d);
      case Tag::ComplexDouble: return Scalar(-toComplexDouble());
      default: return Scalar(-v_.i);
    }
  }

 private:
  Tag tag_;
  union { double d; int64_t i; double z[2]; } v_;
};
template <> inline double Scalar::to<double>() const { return toDouble(); }
template <> inline float Scalar::to<float>() const { return toFloat(); }
template <> inline int64_t Scalar::to<int64_t>() const { return toLong(); }
template <> inline int32_t Scalar::to<int32_t>() const { return int32_t(toLong()); }
template <> inline int16_t Scalar::to<int16_t>() const { return int16_t(toLong()); }
template <> inline int8_t Scalar::to<int8_t>() const { return int8_t(toLong()); }
template <> inline uint8_t Scalar::to<uint8_t>() const { return uint8_t(toLong()); }
template <> inline bool Scalar::to<bool>() const { return toBool(); }
template <> inline std::complex<double> Scalar::to<std::complex<double>>() const { return toComplexDouble(); }
template <> inline std::complex<float> Scalar::to<std::complex<float>>() const {
  auto z = toComplexDouble();
  return std::complex<float>(float(z.real()), float(z.imag()));
}
inline std::ostream& operator<<(std::ostream& out, const Scalar& s) {
  if (s.isFloatingPoint()) return out << s.toDouble();
  if (s.isBoolean()) return out << (s.toBool() ? "true" : "false");
  if (s.isComplex()) return out << s.toComplexDouble();
  return out << s.toLong();
}

// -- TensorOptions -------------------------------------------------------------------------------
class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(ScalarType t) : dtype_(t) {}
  TensorOptions(TypeMeta t) : dtype_(t.toScalarType()) {}
  TensorOptions(Device d) : device_(d) {}
  TensorOptions(DeviceType t) : device_(Device(t)) {}
  TensorOptions(Layout) {}
  TensorOptions dtype(ScalarType t) const { auto o = *this; o.dtype_ = t; return o; }
  TensorOptions dtype(TypeMeta t) const { return dtype(t.toScalarType()); }
  TensorOptions dtype(std::optional<ScalarType> t) const { auto o = *this; o.dtype_ = t; return o; }
  template <typename T> TensorOptions dtype() const { return dtype(CppTypeToScalarType<T>::value); }
  TensorOptions device(Device d) const { auto o = *this; o.device_ = d; return o; }
  TensorOptions device(std::optional<Device> d) const { auto o = *this; o.device_ = d; return o; }
  TensorOptions device(DeviceType t, DeviceIndex i = -1) const { return device(Device(t, i)); }
  TensorOptions device_index(DeviceIndex i) const { return device(Device(kCUDA, i)); }
  TensorOptions layout(Layout) const { return *this; }  // ember has strided tensors only
  TensorOptions requires_grad(bool r) const { auto o = *this; o.requires_grad_ = r; return o; }
  TensorOptions memory_format(MemoryFormat) const { return *this; }

  TypeMeta dtype() const { return TypeMeta(dtype_.value_or(ScalarType::Float)); }
  Device device() const { return device_.value_or(Device(kCPU)); }
  bool requires_grad() const { return requires_grad_; }
  bool has_dtype() const { return dtype_.has_value(); }
  bool has_device() const { return device_.has_value(); }
  Layout layout() const { return kStrided; }
  std::optional<ScalarType> dtype_opt() const { return dtype_; }
  std::optional<Device> device_opt() const { return device_; }

 private:
  std::optional<ScalarType> dtype_;
  std::optional<Device> device_;
  bool requires_grad_ = false;
};
inline TensorOptions dtype(ScalarType t) { return TensorOptions().dtype(t); }
template <typename T> inline TensorOptions dtype() { return TensorOptions().dtype<T>(); }
inline TensorOptions device(Device d) { return TensorOptions().device(d); }
inline TensorOptions device_index(DeviceIndex i) { return TensorOptions().device_index(i); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }
inline TensorOptions layout(Layout l) { return TensorOptions().layout(l); }

}  // namespace c10

namespace caffe2 __attribute__((visibility("hidden"))) {
using c10::TypeMeta;
}

// -- error macros ----------------------------------------------------------------------------------
#define EMBER_THROW_(ErrorType, ...) throw ::c10::ErrorType(::c10::str(__VA_ARGS__))

#define TORCH_CHECK_WITH(ErrorType, cond, ...)                                              \
  if (C10_UNLIKELY(!(cond))) {                                                              \
    throw ::c10::ErrorType(::c10::detail::check_msg(#cond, ##__VA_ARGS__));                 \
  }
#define TORCH_CHECK(cond, ...) TORCH_CHECK_WITH(Error, cond, ##__VA_ARGS__)
#define TORCH_CHECK_VALUE(cond, ...) TORCH_CHECK_WITH(ValueError, cond, ##__VA_ARGS__)
#define TORCH_CHECK_TYPE(cond, ...) TORCH_CHECK_WITH(TypeError, cond, ##__VA_ARGS__)
#define TORCH_CHECK_INDEX(cond, ...) TORCH_CHECK_WITH(IndexError, cond, ##__VA_ARGS__)
#define TORCH_CHECK_NOT_IMPLEMENTED(cond, ...) TORCH_CHECK_WITH(NotImplementedError, cond, ##__VA_ARGS__)
#define TORCH_CHECK_EQ(a, b) TORCH_CHECK((a) == (b), "Check failed: " #a " == " #b " (", (a), " vs. ", (b), ") ")
#define TORCH_CHECK_NE(a, b) TORCH_CHECK((a) != (b), "Check failed: " #a " != " #b " (", (a), " vs. ", (b), ") ")
#define TORCH_CHECK_LT(a, b) TORCH_CHECK((a) < (b), "Check failed: " #a " < " #b " (", (a), " vs. ", (b), ") ")
#define TORCH_CHECK_LE(a, b) TORCH_CHECK((a) <= (b), "Check failed: " #a " <= " #b " (", (a), " vs. ", (b), ") ")
#define TORCH_CHECK_GT(a, b) TORCH_CHECK((a) > (b), "Check failed: " #a " > " #b " (", (a), " vs. ", (b), ") ")
#define TORCH_CHECK_GE(a, b) TORCH_CHECK((a) >= (b), "Check failed: " #a " >= " #b " (", (a), " vs. ", (b), ") ")
#define TORCH_INTERNAL_ASSERT(cond, ...)                                                        \
  if (C10_UNLIKELY(!(cond))) {                                                                  \
    throw ::c10::Error(::c10::str(#cond " INTERNAL ASSERT FAILED at \"", __FILE__, "\":", __LINE__, \
                                  ", please report a bug to PyTorch. ", ##__VA_ARGS__));        \
  }
#define TORCH_INTERNAL_ASSERT_DEBUG_ONLY(cond, ...) TORCH_INTERNAL_ASSERT(cond, ##__VA_ARGS__)
#define AT_ERROR(...) EMBER_THROW_(Error, __VA_ARGS__)
#define AT_ASSERT(cond, ...) TORCH_INTERNAL_ASSERT(cond, ##__VA_ARGS__)
#define TORCH_WARN(...) ::ember_ext::detail::warn(::c10::str(__VA_ARGS__))
#define TORCH_WARN_ONCE(...)                                                 \
  do {                                                                       \
    static bool C10_CONCATENATE(ember_warned_, __LINE__) = false;            \
    if (!C10_CONCATENATE(ember_warned_, __LINE__)) {                         \
      C10_CONCATENATE(ember_warned_, __LINE__) = true;                       \
      TORCH_WARN(__VA_ARGS__);                                               \
    }                                                                        \
  } while (0)

// -- the bridge to Python ----------------------------------------------------------------------------
namespace at __attribute__((visibility("hidden"))) {
using namespace c10;
class Tensor;
}

namespace ember_ext __attribute__((visibility("hidden"))) {
namespace detail {

// Python objects looked up once per extension and kept for the life of the process (never
// decref'd: a static py::object would be destroyed after the interpreter is gone).
inline py::handle ember_module() {
  static py::handle m = py::module_::import("ember").release();
  return m;
}
inline py::handle cpp_module() {
  static py::handle m = py::module_::import("ember._library.cpp").release();
  return m;
}
inline PyObject* tensor_type() {
  static PyObject* t = py::object(ember_module().attr("Tensor")).release().ptr();
  return t;
}
inline bool is_tensor(py::handle h) {
  PyObject* p = h.ptr();
  return Py_TYPE(p) == reinterpret_cast<PyTypeObject*>(tensor_type()) ||
         PyObject_IsInstance(p, tensor_type()) == 1;
}

// set at load by the header-version check (below); a stale extension refuses every call
inline std::string& stale_message() {
  static std::string msg;
  return msg;
}
inline void check_not_stale() {
  if (C10_UNLIKELY(!stale_message().empty())) throw c10::Error(stale_message());
}

// The dispatcher's calling convention: ember.ops.aten.<name>.<overload>._call takes every
// argument positionally, in schema order, with nothing normalized.
inline py::handle aten_call(const char* name, const char* overload) {
  py::object packet = ember_module().attr("ops").attr("aten").attr(name);
  return py::object(packet.attr(overload).attr("_call")).release();
}
#define EMBER_ATEN(name, overload)                                                \
  ([]() -> py::handle {                                                           \
    static py::handle h = ::ember_ext::detail::aten_call(name, overload);         \
    return h;                                                                     \
  }())

inline py::handle dtype_object(c10::ScalarType t) {
  static py::handle table[17] = {};
  static bool filled = false;
  if (!filled) {
    py::list dtypes = cpp_module().attr("SCALAR_TYPES");
    for (size_t i = 0; i < 17 && i < dtypes.size(); ++i) table[i] = py::object(dtypes[i]).release();
    filled = true;
  }
  auto i = static_cast<int>(t);
  if (i < 0 || i > 16 || table[i].is_none())
    throw c10::TypeError(c10::str("ember has no dtype for ScalarType ", t));
  return table[i];
}
inline c10::ScalarType scalar_type_of_dtype(py::handle d) {
  for (int i = 0; i < 16; ++i) {
    auto t = static_cast<c10::ScalarType>(i);
    if (i == 8 || (i >= 12 && i <= 14)) continue;  // no ember dtype
    if (dtype_object(t).ptr() == d.ptr()) return t;
  }
  throw c10::TypeError(c10::str("no c10::ScalarType for ember dtype ", std::string(py::str(d))));
}
inline py::object device_object(const c10::Device& d) {
  static py::handle device_cls = py::object(ember_module().attr("device")).release();
  if (d.has_index()) return device_cls(c10::DeviceTypeName(d.type()), int(d.index()));
  return device_cls(c10::DeviceTypeName(d.type()));
}
inline c10::Device device_of(py::handle d) {
  std::string type = py::str(d.attr("type"));
  py::object index = d.attr("index");
  c10::Device dev(type);
  if (!index.is_none()) dev.set_index(static_cast<c10::DeviceIndex>(index.cast<int>()));
  return dev;
}
inline void warn(const std::string& msg) {
  if (PyErr_WarnEx(PyExc_UserWarning, msg.c_str(), 1) < 0) throw py::error_already_set();
}

}  // namespace detail
}  // namespace ember_ext

// -- at::Tensor --------------------------------------------------------------------------------------
namespace at __attribute__((visibility("hidden"))) {

class Tensor {
 public:
  Tensor() = default;
  // Wraps an ember.Tensor (or None: an undefined tensor).
  explicit Tensor(py::object obj) : obj_(std::move(obj)) {
    if (obj_ && obj_.is_none()) obj_ = py::object();
  }
  Tensor(const Tensor& o) : obj_(o.obj_) {}
  Tensor(Tensor&& o) noexcept : obj_(std::move(o.obj_)) {}
  Tensor& operator=(const Tensor& o) { obj_ = o.obj_; return *this; }
  Tensor& operator=(Tensor&& o) noexcept { obj_ = std::move(o.obj_); return *this; }

  // -- the Python object
  const py::object& py_object() const { return obj_; }
  bool defined() const { return static_cast<bool>(obj_); }
  bool is_same(const Tensor& o) const { return obj_.ptr() == o.obj_.ptr(); }
  void reset() { obj_ = py::object(); }

  // -- metadata (read from the ember.Tensor's fields)
  IntArrayRef sizes() const { fill(sizes_, "_size"); return sizes_; }
  IntArrayRef strides() const { fill(strides_, "_stride"); return strides_; }
  int64_t dim() const { return static_cast<int64_t>(PyTuple_GET_SIZE(field("_size").ptr())); }
  int64_t ndimension() const { return dim(); }
  int64_t size(int64_t d) const { return tuple_at("_size", d); }
  int64_t stride(int64_t d) const { return tuple_at("_stride", d); }
  int64_t numel() const {
    int64_t n = 1;
    for (auto s : sizes()) n *= s;
    return n;
  }
  int64_t storage_offset() const { return field("_offset").cast<int64_t>(); }
  ScalarType scalar_type() const { return ember_ext::detail::scalar_type_of_dtype(field("_dtype")); }
  TypeMeta dtype() const { return TypeMeta(scalar_type()); }
  int64_t element_size() const { return static_cast<int64_t>(elementSize(scalar_type())); }
  int64_t itemsize() const { return element_size(); }
  int64_t nbytes() const { return numel() * element_size(); }
  Device device() const { return ember_ext::detail::device_of(field("_device")); }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_cpu() const { return device().is_cpu(); }
  bool is_meta() const { return device().is_meta(); }
  int64_t get_device() const { auto d = device(); return d.is_cpu() ? -1 : (d.has_index() ? d.index() : 0); }
  Layout layout() const { return kStrided; }
  bool is_floating_point() const { return isFloatingType(scalar_type()); }
  bool is_complex() const { return isComplexType(scalar_type()); }
  bool is_contiguous(MemoryFormat fmt = MemoryFormat::Contiguous) const;
  bool requires_grad() const { return obj_.attr("requires_grad").cast<bool>(); }
  TensorOptions options() const { return TensorOptions().dtype(scalar_type()).device(device()); }
  std::string toString() const;

  // -- data
  void* data_ptr() const { return reinterpret_cast<void*>(obj_.attr("data_ptr")().cast<uintptr_t>()); }
  const void* const_data_ptr() const { return data_ptr(); }
  void* mutable_data_ptr() const { return data_ptr(); }
  template <typename T> T* data_ptr() const;
  template <typename T> const T* const_data_ptr() const { return data_ptr<T>(); }
  template <typename T> T* mutable_data_ptr() const { return data_ptr<T>(); }
  template <typename T> T item() const;
  Scalar item() const;

  // -- ops (each is one call into ember's dispatcher)
  Tensor contiguous(MemoryFormat fmt = MemoryFormat::Contiguous) const;
  Tensor clone() const;
  Tensor detach() const;
  Tensor to(ScalarType t, bool non_blocking = false, bool copy = false) const;
  Tensor to(Device d, bool non_blocking = false, bool copy = false) const;
  Tensor to(Device d, ScalarType t, bool non_blocking = false, bool copy = false) const;
  Tensor to(TensorOptions o, bool non_blocking = false, bool copy = false) const;
  Tensor cpu() const { return to(Device(kCPU)); }
  Tensor cuda() const { return to(Device(kCUDA)); }
  Tensor view(IntArrayRef size) const;
  Tensor reshape(IntArrayRef shape) const;
  Tensor permute(IntArrayRef dims) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const;
  Tensor unsqueeze(int64_t d) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t d) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor expand(IntArrayRef size, bool implicit = false) const;
  Tensor expand_as(const Tensor& other) const { return expand(other.sizes()); }
  Tensor narrow(int64_t d, int64_t start, int64_t length) const;
  Tensor select(int64_t d, int64_t index) const;
  Tensor slice(int64_t d = 0, std::optional<int64_t> start = std::nullopt,
               std::optional<int64_t> end = std::nullopt, int64_t step = 1) const;
  Tensor index_select(int64_t d, const Tensor& index) const;
  Tensor add(const Tensor& o, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& o, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& o, const Scalar& alpha = 1) const;
  Tensor sub(const Scalar& o, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& o) const;
  Tensor mul(const Scalar& o) const;
  Tensor div(const Tensor& o) const;
  Tensor div(const Scalar& o) const;
  Tensor& add_(const Tensor& o, const Scalar& alpha = 1);
  Tensor& add_(const Scalar& o, const Scalar& alpha = 1);
  Tensor& sub_(const Tensor& o, const Scalar& alpha = 1);
  Tensor& sub_(const Scalar& o, const Scalar& alpha = 1);
  Tensor& mul_(const Tensor& o);
  Tensor& mul_(const Scalar& o);
  Tensor& div_(const Tensor& o);
  Tensor& div_(const Scalar& o);
  Tensor pow(const Scalar& e) const;
  Tensor pow(const Tensor& e) const;
  Tensor neg() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor abs() const;
  Tensor sum(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor sum(IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor mean(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor mean(IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor max() const;
  Tensor min() const;
  Tensor matmul(const Tensor& o) const;
  Tensor mm(const Tensor& o) const;
  Tensor eq(const Tensor& o) const;
  Tensor eq(const Scalar& o) const;
  Tensor gt(const Scalar& o) const;
  Tensor lt(const Scalar& o) const;
  Tensor clamp(std::optional<Scalar> min = std::nullopt, std::optional<Scalar> max = std::nullopt) const;
  Tensor& fill_(const Scalar& v);
  Tensor& zero_();
  Tensor& copy_(const Tensor& src, bool non_blocking = false);
  Tensor& requires_grad_(bool r = true);
  Tensor grad() const { return Tensor(obj_.attr("grad")); }
  bool equal(const Tensor& o) const;
  bool allclose(const Tensor& o, double rtol = 1e-05, double atol = 1e-08) const;

 private:
  py::object field(const char* name) const {
    TORCH_CHECK(defined(), "Tensor is undefined");  // PyTorch: "... undefined tensor"
    return obj_.attr(name);
  }
  void fill(std::vector<int64_t>& out, const char* name) const {
    py::object t = field(name);
    Py_ssize_t n = PyTuple_GET_SIZE(t.ptr());
    out.resize(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) out[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(t.ptr(), i));
  }
  int64_t tuple_at(const char* name, int64_t d) const {
    py::object t = field(name);
    int64_t n = PyTuple_GET_SIZE(t.ptr());
    if (n == 0) {
      throw c10::IndexError(c10::str("dimension specified as ", d, " but tensor has no dimensions"));
    }
    TORCH_CHECK_INDEX(d >= -n && d < n, "Dimension out of range (expected to be in range of [", -n,
                      ", ", n - 1, "], but got ", d, ")");
    return PyLong_AsLongLong(PyTuple_GET_ITEM(t.ptr(), d < 0 ? d + n : d));
  }

  py::object obj_;
  mutable std::vector<int64_t> sizes_;
  mutable std::vector<int64_t> strides_;
};

using TensorList = ArrayRef<Tensor>;
using ITensorListRef = ArrayRef<Tensor>;

}  // namespace at

// -- pybind11 type casters -------------------------------------------------------------------------
// Tensor <-> ember.Tensor (by reference), Scalar <-> Python number, ScalarType <-> ember dtype,
// Device <-> ember.device, IntArrayRef <- sequence of ints (-> list).
namespace pybind11 {
namespace detail {

template <>
struct type_caster<at::Tensor> {
  PYBIND11_TYPE_CASTER(at::Tensor, const_name("ember.Tensor"));
  bool load(handle src, bool) {
    ember_ext::detail::check_not_stale();
    if (!ember_ext::detail::is_tensor(src)) return false;
    value = at::Tensor(reinterpret_borrow<object>(src));
    return true;
  }
  static handle cast(const at::Tensor& t, return_value_policy, handle) {
    if (!t.defined()) return none().release();
    return t.py_object().inc_ref();
  }
};

template <>
struct type_caster<c10::Scalar> {
  PYBIND11_TYPE_CASTER(c10::Scalar, const_name("Number"));
  bool load(handle src, bool) {
    PyObject* p = src.ptr();
    if (PyBool_Check(p)) { value = c10::Scalar(p == Py_True); return true; }
    if (PyLong_Check(p)) { value = c10::Scalar(static_cast<int64_t>(PyLong_AsLongLong(p))); return !PyErr_Occurred(); }
    if (PyFloat_Check(p)) { value = c10::Scalar(PyFloat_AS_DOUBLE(p)); return true; }
    if (PyComplex_Check(p)) {
      value = c10::Scalar(std::complex<double>(PyComplex_RealAsDouble(p), PyComplex_ImagAsDouble(p)));
      return true;
    }
    if (ember_ext::detail::is_tensor(src)) {  // a one-element tensor is a Scalar argument too
      value = at::Tensor(reinterpret_borrow<object>(src)).item();
      return true;
    }
    if (PyIndex_Check(p)) {  // NumPy integers and other __index__ types
      object i = reinterpret_steal<object>(PyNumber_Index(p));
      if (!i) { PyErr_Clear(); return false; }
      value = c10::Scalar(static_cast<int64_t>(PyLong_AsLongLong(i.ptr())));
      return !PyErr_Occurred();
    }
    if (PyObject_HasAttrString(p, "__float__")) {  // NumPy floats
      double d = PyFloat_AsDouble(p);
      if (d == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return false; }
      value = c10::Scalar(d);
      return true;
    }
    return false;
  }
  static handle cast(const c10::Scalar& s, return_value_policy, handle) {
    if (s.isFloatingPoint()) return PyFloat_FromDouble(s.toDouble());
    if (s.isBoolean()) return pybind11::bool_(s.toBool()).release();
    if (s.isComplex()) {
      auto z = s.toComplexDouble();
      return PyComplex_FromDoubles(z.real(), z.imag());
    }
    return PyLong_FromLongLong(s.toLong());
  }
};

template <>
struct type_caster<c10::ScalarType> {
  PYBIND11_TYPE_CASTER(c10::ScalarType, const_name("ember.dtype"));
  bool load(handle src, bool) {
    try {
      value = ember_ext::detail::scalar_type_of_dtype(src);
      return true;
    } catch (const c10::Error&) {
      return false;
    }
  }
  static handle cast(c10::ScalarType t, return_value_policy, handle) {
    return ember_ext::detail::dtype_object(t).inc_ref();
  }
};

template <>
struct type_caster<c10::TypeMeta> {
  PYBIND11_TYPE_CASTER(c10::TypeMeta, const_name("ember.dtype"));
  bool load(handle src, bool convert) {
    type_caster<c10::ScalarType> inner;
    if (!inner.load(src, convert)) return false;
    value = c10::TypeMeta(static_cast<c10::ScalarType>(inner));
    return true;
  }
  static handle cast(c10::TypeMeta t, return_value_policy p, handle h) {
    return type_caster<c10::ScalarType>::cast(t.toScalarType(), p, h);
  }
};

template <>
struct type_caster<c10::Device> {
  PYBIND11_TYPE_CASTER(c10::Device, const_name("ember.device"));
  type_caster() : value(c10::kCPU) {}
  bool load(handle src, bool) {
    if (PyUnicode_Check(src.ptr())) { value = c10::Device(src.cast<std::string>()); return true; }
    if (!hasattr(src, "type") || !hasattr(src, "index")) return false;
    value = ember_ext::detail::device_of(src);
    return true;
  }
  static handle cast(const c10::Device& d, return_value_policy, handle) {
    return ember_ext::detail::device_object(d).release();
  }
};

template <>
struct type_caster<c10::IntArrayRef> {
  PYBIND11_TYPE_CASTER(c10::IntArrayRef, const_name("List[int]"));
  bool load(handle src, bool convert) {
    if (PyLong_Check(src.ptr())) {  // an int where int[] is expected (int[1] in a schema)
      storage_ = {src.cast<int64_t>()};
    } else {
      make_caster<std::vector<int64_t>> inner;
      if (!inner.load(src, convert)) return false;
      storage_ = cast_op<std::vector<int64_t>&&>(std::move(inner));
    }
    value = c10::IntArrayRef(storage_);
    return true;
  }
  static handle cast(c10::IntArrayRef a, return_value_policy, handle) {
    list l(a.size());
    for (size_t i = 0; i < a.size(); ++i) l[i] = int_(a[i]);
    return l.release();
  }

 private:
  std::vector<int64_t> storage_;
};

}  // namespace detail
}  // namespace pybind11

// -- at::Tensor's methods and the at:: functions ------------------------------------------------------
namespace at __attribute__((visibility("hidden"))) {
namespace detail {
inline Tensor wrap(py::object o) { return Tensor(std::move(o)); }
inline std::optional<py::object> opt_dtype(const TensorOptions& o) {
  if (!o.has_dtype()) return std::nullopt;
  return py::reinterpret_borrow<py::object>(ember_ext::detail::dtype_object(o.dtype().toScalarType()));
}
inline std::optional<py::object> opt_device(const TensorOptions& o) {
  if (!o.has_device()) return std::nullopt;
  return ember_ext::detail::device_object(o.device());
}
inline Tensor finish(Tensor t, const TensorOptions& o) {
  if (o.requires_grad()) t.requires_grad_(true);
  return t;
}
}  // namespace detail

#define EMBER_CALL(name, overload, ...) detail::wrap(EMBER_ATEN(name, overload)(__VA_ARGS__))
#define EMBER_CALL_(name, overload, ...) (EMBER_ATEN(name, overload)(__VA_ARGS__), *this)

template <typename T>
inline T* Tensor::data_ptr() const {
  ScalarType t = scalar_type();
  TORCH_CHECK(t == CppTypeToScalarType<T>::value, "expected scalar type ",
              CppTypeToScalarType<T>::value, " but found ", t);
  return static_cast<T*>(data_ptr());
}
template <typename T>
inline T Tensor::item() const { return item().to<T>(); }
inline Scalar Tensor::item() const {
  py::object v = obj_.attr("item")();
  return v.cast<Scalar>();
}
inline bool Tensor::is_contiguous(MemoryFormat fmt) const {
  if (fmt == MemoryFormat::Contiguous) return obj_.attr("is_contiguous")().cast<bool>();
  py::object cl = ember_ext::detail::ember_module().attr(
      fmt == MemoryFormat::ChannelsLast ? "channels_last" : "channels_last_3d");
  return obj_.attr("is_contiguous")(cl).cast<bool>();
}
inline std::string Tensor::toString() const { return py::str(obj_.attr("type")()); }
inline std::ostream& operator<<(std::ostream& out, const Tensor& t) {
  return out << (t.defined() ? std::string(py::str(t.py_object())) : std::string("[ Tensor (undefined) ]"));
}

inline Tensor Tensor::contiguous(MemoryFormat fmt) const {
  if (fmt == MemoryFormat::Contiguous) return EMBER_CALL("contiguous", "default", obj_, ember_ext::detail::ember_module().attr("contiguous_format"));
  return detail::wrap(obj_.attr("contiguous")(ember_ext::detail::ember_module().attr("channels_last")));
}
inline Tensor Tensor::clone() const { return EMBER_CALL("clone", "default", obj_, py::none()); }
inline Tensor Tensor::detach() const { return EMBER_CALL("detach", "default", obj_); }
inline Tensor Tensor::to(ScalarType t, bool non_blocking, bool copy) const {
  return detail::wrap(obj_.attr("to")(t, py::arg("non_blocking") = non_blocking, py::arg("copy") = copy));
}
inline Tensor Tensor::to(Device d, bool non_blocking, bool copy) const {
  return detail::wrap(obj_.attr("to")(d, py::arg("non_blocking") = non_blocking, py::arg("copy") = copy));
}
inline Tensor Tensor::to(Device d, ScalarType t, bool non_blocking, bool copy) const {
  return detail::wrap(obj_.attr("to")(d, t, py::arg("non_blocking") = non_blocking, py::arg("copy") = copy));
}
inline Tensor Tensor::to(TensorOptions o, bool non_blocking, bool copy) const {
  py::dict kw;
  if (o.has_dtype()) kw["dtype"] = o.dtype().toScalarType();
  if (o.has_device()) kw["device"] = o.device();
  kw["non_blocking"] = non_blocking;
  kw["copy"] = copy;
  return detail::wrap(obj_.attr("to")(**kw));
}
inline Tensor Tensor::view(IntArrayRef s) const { return EMBER_CALL("view", "default", obj_, s); }
inline Tensor Tensor::reshape(IntArrayRef s) const { return EMBER_CALL("reshape", "default", obj_, s); }
inline Tensor Tensor::permute(IntArrayRef d) const { return EMBER_CALL("permute", "default", obj_, d); }
inline Tensor Tensor::transpose(int64_t a, int64_t b) const { return EMBER_CALL("transpose", "int", obj_, a, b); }
inline Tensor Tensor::t() const { return EMBER_CALL("t", "default", obj_); }
inline Tensor Tensor::unsqueeze(int64_t d) const { return EMBER_CALL("unsqueeze", "default", obj_, d); }
inline Tensor Tensor::squeeze() const { return EMBER_CALL("squeeze", "default", obj_); }
inline Tensor Tensor::squeeze(int64_t d) const { return EMBER_CALL("squeeze", "dim", obj_, d); }
inline Tensor Tensor::flatten(int64_t s, int64_t e) const { return EMBER_CALL("flatten", "using_ints", obj_, s, e); }
inline Tensor Tensor::expand(IntArrayRef s, bool implicit) const { return EMBER_CALL("expand", "default", obj_, s, implicit); }
inline Tensor Tensor::narrow(int64_t d, int64_t s, int64_t l) const { return EMBER_CALL("narrow", "default", obj_, d, s, l); }
inline Tensor Tensor::select(int64_t d, int64_t i) const { return EMBER_CALL("select", "int", obj_, d, i); }
inline Tensor Tensor::slice(int64_t d, std::optional<int64_t> s, std::optional<int64_t> e, int64_t step) const {
  return EMBER_CALL("slice", "Tensor", obj_, d, s, e, step);
}
inline Tensor Tensor::index_select(int64_t d, const Tensor& i) const { return EMBER_CALL("index_select", "default", obj_, d, i); }
inline Tensor Tensor::add(const Tensor& o, const Scalar& a) const { return EMBER_CALL("add", "Tensor", obj_, o, a); }
inline Tensor Tensor::add(const Scalar& o, const Scalar& a) const { return EMBER_CALL("add", "Scalar", obj_, o, a); }
inline Tensor Tensor::sub(const Tensor& o, const Scalar& a) const { return EMBER_CALL("sub", "Tensor", obj_, o, a); }
inline Tensor Tensor::sub(const Scalar& o, const Scalar& a) const { return EMBER_CALL("sub", "Scalar", obj_, o, a); }
inline Tensor Tensor::mul(const Tensor& o) const { return EMBER_CALL("mul", "Tensor", obj_, o); }
inline Tensor Tensor::mul(const Scalar& o) const { return EMBER_CALL("mul", "Scalar", obj_, o); }
inline Tensor Tensor::div(const Tensor& o) const { return EMBER_CALL("div", "Tensor", obj_, o); }
inline Tensor Tensor::div(const Scalar& o) const { return EMBER_CALL("div", "Scalar", obj_, o); }
inline Tensor& Tensor::add_(const Tensor& o, const Scalar& a) { return EMBER_CALL_("add_", "Tensor", obj_, o, a); }
inline Tensor& Tensor::add_(const Scalar& o, const Scalar& a) { return EMBER_CALL_("add_", "Scalar", obj_, o, a); }
inline Tensor& Tensor::sub_(const Tensor& o, const Scalar& a) { return EMBER_CALL_("sub_", "Tensor", obj_, o, a); }
inline Tensor& Tensor::sub_(const Scalar& o, const Scalar& a) { return EMBER_CALL_("sub_", "Scalar", obj_, o, a); }
inline Tensor& Tensor::mul_(const Tensor& o) { return EMBER_CALL_("mul_", "Tensor", obj_, o); }
inline Tensor& Tensor::mul_(const Scalar& o) { return EMBER_CALL_("mul_", "Scalar", obj_, o); }
inline Tensor& Tensor::div_(const Tensor& o) { return EMBER_CALL_("div_", "Tensor", obj_, o); }
inline Tensor& Tensor::div_(const Scalar& o) { return EMBER_CALL_("div_", "Scalar", obj_, o); }
inline Tensor Tensor::pow(const Scalar& e) const { return EMBER_CALL("pow", "Tensor_Scalar", obj_, e); }
inline Tensor Tensor::pow(const Tensor& e) const { return EMBER_CALL("pow", "Tensor_Tensor", obj_, e); }
inline Tensor Tensor::neg() const { return EMBER_CALL("neg", "default", obj_); }
inline Tensor Tensor::exp() const { return EMBER_CALL("exp", "default", obj_); }
inline Tensor Tensor::log() const { return EMBER_CALL("log", "default", obj_); }
inline Tensor Tensor::sin() const { return EMBER_CALL("sin", "default", obj_); }
inline Tensor Tensor::cos() const { return EMBER_CALL("cos", "default", obj_); }
inline Tensor Tensor::tanh() const { return EMBER_CALL("tanh", "default", obj_); }
inline Tensor Tensor::sigmoid() const { return EMBER_CALL("sigmoid", "default", obj_); }
inline Tensor Tensor::relu() const { return EMBER_CALL("relu", "default", obj_); }
inline Tensor Tensor::sqrt() const { return EMBER_CALL("sqrt", "default", obj_); }
inline Tensor Tensor::rsqrt() const { return EMBER_CALL("rsqrt", "default", obj_); }
inline Tensor Tensor::abs() const { return EMBER_CALL("abs", "default", obj_); }
inline Tensor Tensor::sum(std::optional<ScalarType> dt) const { return EMBER_CALL("sum", "default", obj_, dt); }
inline Tensor Tensor::sum(IntArrayRef d, bool k, std::optional<ScalarType> dt) const { return EMBER_CALL("sum", "dim_IntList", obj_, d, k, dt); }
inline Tensor Tensor::mean(std::optional<ScalarType> dt) const { return EMBER_CALL("mean", "default", obj_, dt); }
inline Tensor Tensor::mean(IntArrayRef d, bool k, std::optional<ScalarType> dt) const { return EMBER_CALL("mean", "dim", obj_, d, k, dt); }
inline Tensor Tensor::max() const { return EMBER_CALL("max", "default", obj_); }
inline Tensor Tensor::min() const { return EMBER_CALL("min", "default", obj_); }
inline Tensor Tensor::matmul(const Tensor& o) const { return EMBER_CALL("matmul", "default", obj_, o); }
inline Tensor Tensor::mm(const Tensor& o) const { return EMBER_CALL("mm", "default", obj_, o); }
inline Tensor Tensor::eq(const Tensor& o) const { return EMBER_CALL("eq", "Tensor", obj_, o); }
inline Tensor Tensor::eq(const Scalar& o) const { return EMBER_CALL("eq", "Scalar", obj_, o); }
inline Tensor Tensor::gt(const Scalar& o) const { return EMBER_CALL("gt", "Scalar", obj_, o); }
inline Tensor Tensor::lt(const Scalar& o) const { return EMBER_CALL("lt", "Scalar", obj_, o); }
inline Tensor Tensor::clamp(std::optional<Scalar> lo, std::optional<Scalar> hi) const { return EMBER_CALL("clamp", "default", obj_, lo, hi); }
inline Tensor& Tensor::fill_(const Scalar& v) { return EMBER_CALL_("fill_", "Scalar", obj_, v); }
inline Tensor& Tensor::zero_() { return EMBER_CALL_("zero_", "default", obj_); }
inline Tensor& Tensor::copy_(const Tensor& s, bool nb) { return EMBER_CALL_("copy_", "default", obj_, s, nb); }
inline Tensor& Tensor::requires_grad_(bool r) { obj_.attr("requires_grad_")(r); return *this; }
inline bool Tensor::equal(const Tensor& o) const { return EMBER_ATEN("equal", "default")(obj_, o).cast<bool>(); }
inline bool Tensor::allclose(const Tensor& o, double rtol, double atol) const {
  return EMBER_ATEN("allclose", "default")(obj_, o, rtol, atol, false).cast<bool>();
}

// operators (PyTorch's TensorOperators.h)
inline Tensor operator-(const Tensor& a) { return a.neg(); }
inline Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
inline Tensor operator+(const Tensor& a, const Scalar& b) { return a.add(b); }
inline Tensor operator+(const Scalar& a, const Tensor& b) { return b.add(a); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return a.sub(b); }
inline Tensor operator-(const Tensor& a, const Scalar& b) { return a.sub(b); }
inline Tensor operator-(const Scalar& a, const Tensor& b) { return b.neg().add(a); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
inline Tensor operator*(const Tensor& a, const Scalar& b) { return a.mul(b); }
inline Tensor operator*(const Scalar& a, const Tensor& b) { return b.mul(a); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return a.div(b); }
inline Tensor operator/(const Tensor& a, const Scalar& b) { return a.div(b); }
inline Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
inline Tensor& operator+=(Tensor& a, const Scalar& b) { return a.add_(b); }
inline Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
inline Tensor& operator-=(Tensor& a, const Scalar& b) { return a.sub_(b); }
inline Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
inline Tensor& operator*=(Tensor& a, const Scalar& b) { return a.mul_(b); }
inline Tensor& operator/=(Tensor& a, const Tensor& b) { return a.div_(b); }
inline Tensor& operator/=(Tensor& a, const Scalar& b) { return a.div_(b); }

// factories
inline Tensor empty(IntArrayRef size, TensorOptions o = {}) {
  return detail::finish(EMBER_CALL("empty", "memory_format", size, detail::opt_dtype(o), py::none(),
                                   detail::opt_device(o), py::none(), py::none()), o);
}
inline Tensor empty_like(const Tensor& t, TensorOptions o = {}) {
  return detail::finish(EMBER_CALL("empty_like", "default", t, detail::opt_dtype(o), py::none(),
                                   detail::opt_device(o), py::none(), py::none()), o);
}
inline Tensor zeros(IntArrayRef size, TensorOptions o = {}) {
  return detail::finish(EMBER_CALL("zeros", "default", size, detail::opt_dtype(o), py::none(),
                                   detail::opt_device(o), py::none()), o);
}
inline Tensor ones(IntArrayRef size, TensorOptions o = {}) {
  return detail::finish(EMBER_CALL("ones", "default", size, detail::opt_dtype(o), py::none(),
                                   detail::opt_device(o), py::none()), o);
}
inline Tensor full(IntArrayRef size, const Scalar& v, TensorOptions o = {}) {
  return detail::finish(EMBER_CALL("full", "default", size, v, detail::opt_dtype(o), py::none(),
                                   detail::opt_device(o), py::none()), o);
}
inline Tensor randn(IntArrayRef size, TensorOptions o = {}) {
  return detail::finish(EMBER_CALL("randn", "default", size, detail::opt_dtype(o), py::none(),
                                   detail::opt_device(o), py::none()), o);
}
inline Tensor rand(IntArrayRef size, TensorOptions o = {}) {
  return detail::finish(EMBER_CALL("rand", "default", size, detail::opt_dtype(o), py::none(),
                                   detail::opt_device(o), py::none()), o);
}
inline Tensor arange(const Scalar& end, TensorOptions o = {}) {
  return detail::finish(EMBER_CALL("arange", "default", end, detail::opt_dtype(o), py::none(),
                                   detail::opt_device(o), py::none()), o);
}
inline Tensor arange(const Scalar& start, const Scalar& end, TensorOptions o = {}) {
  return detail::finish(EMBER_CALL("arange", "start", start, end, detail::opt_dtype(o), py::none(),
                                   detail::opt_device(o), py::none()), o);
}
inline Tensor zeros_like(const Tensor& t, TensorOptions o = {}) {
  return detail::finish(EMBER_CALL("zeros_like", "default", t, detail::opt_dtype(o), py::none(),
                                   detail::opt_device(o), py::none(), py::none()), o);
}
inline Tensor ones_like(const Tensor& t, TensorOptions o = {}) {
  return detail::finish(EMBER_CALL("ones_like", "default", t, detail::opt_dtype(o), py::none(),
                                   detail::opt_device(o), py::none(), py::none()), o);
}

// functions
inline Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1) { return a.add(b, alpha); }
inline Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1) { return a.add(b, alpha); }
inline Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1) { return a.sub(b, alpha); }
inline Tensor mul(const Tensor& a, const Tensor& b) { return a.mul(b); }
inline Tensor mul(const Tensor& a, const Scalar& b) { return a.mul(b); }
inline Tensor div(const Tensor& a, const Tensor& b) { return a.div(b); }
inline Tensor div(const Tensor& a, const Scalar& b) { return a.div(b); }
inline Tensor pow(const Tensor& a, const Scalar& e) { return a.pow(e); }
inline Tensor pow(const Tensor& a, const Tensor& e) { return a.pow(e); }
inline Tensor neg(const Tensor& a) { return a.neg(); }
inline Tensor exp(const Tensor& a) { return a.exp(); }
inline Tensor log(const Tensor& a) { return a.log(); }
inline Tensor sin(const Tensor& a) { return a.sin(); }
inline Tensor cos(const Tensor& a) { return a.cos(); }
inline Tensor tanh(const Tensor& a) { return a.tanh(); }
inline Tensor sigmoid(const Tensor& a) { return a.sigmoid(); }
inline Tensor relu(const Tensor& a) { return a.relu(); }
inline Tensor sqrt(const Tensor& a) { return a.sqrt(); }
inline Tensor rsqrt(const Tensor& a) { return a.rsqrt(); }
inline Tensor abs(const Tensor& a) { return a.abs(); }
inline Tensor sum(const Tensor& a, std::optional<ScalarType> dt = std::nullopt) { return a.sum(dt); }
inline Tensor sum(const Tensor& a, IntArrayRef d, bool k = false, std::optional<ScalarType> dt = std::nullopt) { return a.sum(d, k, dt); }
inline Tensor mean(const Tensor& a, std::optional<ScalarType> dt = std::nullopt) { return a.mean(dt); }
inline Tensor mean(const Tensor& a, IntArrayRef d, bool k = false, std::optional<ScalarType> dt = std::nullopt) { return a.mean(d, k, dt); }
inline Tensor matmul(const Tensor& a, const Tensor& b) { return a.matmul(b); }
inline Tensor mm(const Tensor& a, const Tensor& b) { return a.mm(b); }
inline Tensor clamp(const Tensor& a, std::optional<Scalar> lo = std::nullopt, std::optional<Scalar> hi = std::nullopt) { return a.clamp(lo, hi); }
inline Tensor maximum(const Tensor& a, const Tensor& b) { return EMBER_CALL("maximum", "default", a, b); }
inline Tensor minimum(const Tensor& a, const Tensor& b) { return EMBER_CALL("minimum", "default", a, b); }
inline Tensor where(const Tensor& c, const Tensor& a, const Tensor& b) { return EMBER_CALL("where", "self", c, a, b); }
inline Tensor cat(TensorList ts, int64_t d = 0) { return EMBER_CALL("cat", "default", std::vector<Tensor>(ts.begin(), ts.end()), d); }
inline Tensor stack(TensorList ts, int64_t d = 0) { return EMBER_CALL("stack", "default", std::vector<Tensor>(ts.begin(), ts.end()), d); }
inline Tensor reshape(const Tensor& a, IntArrayRef s) { return a.reshape(s); }
inline Tensor transpose(const Tensor& a, int64_t d0, int64_t d1) { return a.transpose(d0, d1); }
inline Tensor unsqueeze(const Tensor& a, int64_t d) { return a.unsqueeze(d); }
inline Tensor index_select(const Tensor& a, int64_t d, const Tensor& i) { return a.index_select(d, i); }

// Turns autograd recording off for a scope (at::NoGradGuard / torch::NoGradGuard).
class NoGradGuard {
 public:
  NoGradGuard() {
    py::handle m = ember_ext::detail::ember_module();
    prev_ = m.attr("is_grad_enabled")().cast<bool>();
    m.attr("set_grad_enabled")(false);  // takes effect on the call, as in PyTorch
  }
  ~NoGradGuard() {
    try {
      ember_ext::detail::ember_module().attr("set_grad_enabled")(prev_);
    } catch (...) {
    }
  }

 private:
  bool prev_;
};
using AutoGradMode = NoGradGuard;

}  // namespace at

// at::Tensor holds py::object; extensions name it through these namespaces too.
namespace torch __attribute__((visibility("hidden"))) {
using namespace at;
// torch/types.h's dtype names
constexpr auto kUInt8 = at::kByte;
constexpr auto kInt8 = at::kChar;
constexpr auto kInt16 = at::kShort;
constexpr auto kInt32 = at::kInt;
constexpr auto kInt64 = at::kLong;
constexpr auto kFloat16 = at::kHalf;
constexpr auto kFloat32 = at::kFloat;
constexpr auto kFloat64 = at::kDouble;
constexpr auto kComplex32 = at::kComplexHalf;
constexpr auto kComplex64 = at::kComplexFloat;
constexpr auto kComplex128 = at::kComplexDouble;
using at::kBool;
using at::kBFloat16;

// torch::wrap_pybind_function(f): f, with c10 errors raised as the Python exception they name
// (load_inline's generated bindings use it, as PyTorch's do).
namespace detail {
[[noreturn]] inline void rethrow_as_python() {
  try {
    throw;
  } catch (const c10::ValueError& e) {
    throw py::value_error(e.what());
  } catch (const c10::TypeError& e) {
    throw py::type_error(e.what());
  } catch (const c10::IndexError& e) {
    throw py::index_error(e.what());
  } catch (const c10::NotImplementedError& e) {
    PyErr_SetString(PyExc_NotImplementedError, e.what());
    throw py::error_already_set();
  } catch (const c10::Error& e) {
    throw std::runtime_error(e.what());
  }
}
}  // namespace detail
template <typename Ret, typename... Args>
inline std::function<Ret(Args...)> wrap_pybind_function(Ret (*f)(Args...)) {
  return [f](Args... args) -> Ret {
    try {
      return f(std::forward<Args>(args)...);
    } catch (...) {
      detail::rethrow_as_python();
    }
  };
}
}  // namespace torch

// -- load time -------------------------------------------------------------------------------------
namespace ember_ext __attribute__((visibility("hidden"))) {
namespace detail {

// Holds the GIL for a scope: a library is loaded from Python (import holds the GIL, ctypes may
// have released it), and a static initializer runs inside that load.
struct GILHold {
  PyGILState_STATE state = PyGILState_Ensure();
  ~GILHold() { PyGILState_Release(state); }
};

// Hands an exception raised while loading to ember._library.cpp, which the loader raises.
inline void record_load_error(py::object exc) {
  try {
    cpp_module().attr("_record_load_error")(exc);
  } catch (py::error_already_set&) {
    // ember itself is not importable: nothing to report to.
  }
}
inline void record_current_exception() {
  try {
    throw;
  } catch (py::error_already_set& e) {
    record_load_error(e.value());
  } catch (const c10::Error& e) {
    record_load_error(py::reinterpret_borrow<py::object>(PyExc_RuntimeError)(e.what()));
  } catch (const std::exception& e) {
    record_load_error(py::reinterpret_borrow<py::object>(PyExc_RuntimeError)(e.what()));
  } catch (...) {
    record_load_error(py::reinterpret_borrow<py::object>(PyExc_RuntimeError)(
        "unknown C++ exception while loading an extension"));
  }
}

// c10 errors become the Python exception they name, in this extension's pybind11 functions
// (PYBIND11_MODULE bindings and TORCH_LIBRARY kernels alike).
inline void translate_c10_error(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const c10::ValueError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const c10::TypeError& e) {
    PyErr_SetString(PyExc_TypeError, e.what());
  } catch (const c10::IndexError& e) {
    PyErr_SetString(PyExc_IndexError, e.what());
  } catch (const c10::NotImplementedError& e) {
    PyErr_SetString(PyExc_NotImplementedError, e.what());
  } catch (const c10::Error& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
}

// Runs once per extension when it is loaded: installs the translator and refuses a build made
// against other headers than this ember's.
inline bool on_load() {
  GILHold gil;
  try {
    py::register_local_exception_translator(&translate_c10_error);
    int expected = cpp_module().attr("HEADER_VERSION").cast<int>();
    if (expected != EMBER_EXTENSION_HEADER_VERSION) {
      stale_message() = py::str(cpp_module().attr("_stale_message")(EMBER_EXTENSION_HEADER_VERSION));
      record_load_error(py::reinterpret_borrow<py::object>(PyExc_RuntimeError)(stale_message()));
    }
  } catch (...) {
    record_current_exception();
  }
  return true;
}
inline const bool loaded = on_load();

}  // namespace detail
}  // namespace ember_ext
