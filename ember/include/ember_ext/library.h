// ember's C++ extension API, registration: torch::Library and the TORCH_LIBRARY,
// TORCH_LIBRARY_IMPL and TORCH_LIBRARY_FRAGMENT macros.
//
// A TORCH_LIBRARY block runs when the shared library is loaded (a static initializer, as in
// PyTorch) and registers through ember.library.Library, so the schema is parsed by ember's
// parser, the op is ember.ops.<ns>.<name>, and the errors (a namespace defined twice, an op
// defined twice, a bad schema) are ember's, which are PyTorch's. A kernel is wrapped as a
// pybind11 function: the dispatcher calls it with the schema's arguments in order, the casters
// of core.h convert them, and a C++ exception becomes a Python exception. A failure while
// loading is recorded (a static initializer must not throw) and raised by the loader
// (ember.utils.cpp_extension.load / ember.ops.load_library).
#pragma once

#include "core.h"

#define EMBER_DISPATCH_KEYS(_)                                                                    \
  _(Undefined) _(CPU) _(CUDA) _(Meta) _(PrivateUse1) _(BackendSelect) _(Python) _(Functionalize) \
  _(ADInplaceOrView) _(AutogradOther) _(AutogradCPU) _(AutogradCUDA) _(AutogradMeta)             \
  _(AutogradPrivateUse1) _(AutocastCPU) _(AutocastCUDA) _(Autograd) _(CompositeImplicitAutograd) \
  _(CompositeExplicitAutograd) _(CompositeExplicitAutogradNonFunctional) _(FuncTorchBatched)

namespace c10 __attribute__((visibility("hidden"))) {
#define EMBER_KEY_ENUM(k) k,
enum class DispatchKey : uint16_t { EMBER_DISPATCH_KEYS(EMBER_KEY_ENUM) };
#undef EMBER_KEY_ENUM
inline const char* toString(DispatchKey k) {
#define EMBER_KEY_NAME(k) #k,
  static const char* names[] = {EMBER_DISPATCH_KEYS(EMBER_KEY_NAME)};
#undef EMBER_KEY_NAME
  return names[static_cast<int>(k)];
}
inline std::ostream& operator<<(std::ostream& out, DispatchKey k) { return out << toString(k); }
inline DispatchKey deviceTypeToDispatchKey(DeviceType t) {
  switch (t) {
    case DeviceType::CPU: return DispatchKey::CPU;
    case DeviceType::CUDA: return DispatchKey::CUDA;
    case DeviceType::Meta: return DispatchKey::Meta;
    case DeviceType::PrivateUse1: return DispatchKey::PrivateUse1;
  }
  return DispatchKey::Undefined;
}
enum class AliasAnalysisKind : uint8_t { INTERNAL_SPECIAL_CASE, CONSERVATIVE, FROM_SCHEMA, PURE_FUNCTION };
}  // namespace c10

namespace torch __attribute__((visibility("hidden"))) {

template <typename Func>
struct DispatchedFn {
  c10::DispatchKey key;
  Func fn;
};
// m.impl("op", torch::dispatch(c10::DispatchKey::CPU, fn)): a kernel for one key.
template <typename Func>
inline DispatchedFn<typename std::decay<Func>::type> dispatch(c10::DispatchKey k, Func&& f) {
  return {k, std::forward<Func>(f)};
}
template <typename Func>
inline DispatchedFn<typename std::decay<Func>::type> dispatch(c10::DeviceType t, Func&& f) {
  return {c10::deviceTypeToDispatchKey(t), std::forward<Func>(f)};
}
#define TORCH_FN(func) (&func)

class Library {
 public:
  enum Kind { DEF, IMPL, FRAGMENT };

  Library(Kind kind, std::string ns, std::optional<c10::DispatchKey> k, const char* file, uint32_t line)
      : kind_(kind), ns_(std::move(ns)), key_(k),
        debug_(c10::str("registered at ", file, ":", line)) {
    static const char* kinds[] = {"DEF", "IMPL", "FRAGMENT"};
    lib_ = ember_ext::detail::cpp_module().attr("_make_library")(ns_, kinds[kind],
                                                                  k ? c10::toString(*k) : "");
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  // m.def("name(Tensor x) -> Tensor")
  Library& def(const char* schema) & {
    ember_ext::detail::cpp_module().attr("_def")(lib_, schema, debug_);
    return *this;
  }
  Library& def(const std::string& schema) & { return def(schema.c_str()); }
  // m.def("name(Tensor x) -> Tensor", fn): the schema and a kernel for every backend
  // (CompositeImplicitAutograd, as PyTorch's catch-all).
  template <typename Func>
  Library& def(const char* schema, Func&& f) & {
    def(schema);
    std::string s(schema);
    return register_kernel(s.substr(0, s.find('(')), "CompositeImplicitAutograd", std::forward<Func>(f));
  }
  // m.impl("name", fn): a kernel on the library's dispatch key (TORCH_LIBRARY_IMPL) or, in a
  // TORCH_LIBRARY block, for every backend.
  template <typename Func>
  Library& impl(const char* name, Func&& f) & {
    return register_kernel(name, key_ ? c10::toString(*key_) : "CompositeImplicitAutograd",
                           std::forward<Func>(f));
  }
  template <typename Func>
  Library& impl(const char* name, DispatchedFn<Func> d) & {
    return register_kernel(name, c10::toString(d.key), std::move(d.fn));
  }
  template <typename Func>
  Library& impl(const std::string& name, Func&& f) & { return impl(name.c_str(), std::forward<Func>(f)); }

  const std::string& ns() const { return ns_; }

 private:
  template <typename Func>
  Library& register_kernel(const std::string& name, const char* key, Func&& f) {
    using Fn = typename std::decay<Func>::type;
    Fn fn = std::forward<Func>(f);
    py::cpp_function kernel(fn, py::name(name.c_str()));
    ember_ext::detail::cpp_module().attr("_impl")(lib_, name, kernel, key, debug_);
    return *this;
  }

  Kind kind_;
  std::string ns_;
  std::optional<c10::DispatchKey> key_;
  std::string debug_;
  py::object lib_;
};

namespace detail {
// The static object behind each TORCH_LIBRARY* block: registers when the library is loaded.
class TorchLibraryInit {
 public:
  using InitFn = void(Library&);
  TorchLibraryInit(Library::Kind kind, InitFn* fn, const char* ns, std::optional<c10::DispatchKey> k,
                   const char* file, uint32_t line) {
    ember_ext::detail::GILHold gil;
    if (!ember_ext::detail::stale_message().empty()) return;  // refused at load already
    try {
      Library lib(kind, ns, k, file, line);
      fn(lib);
    } catch (...) {
      ember_ext::detail::record_current_exception();
    }
  }
};
}  // namespace detail
}  // namespace torch

#define TORCH_LIBRARY(ns, m)                                                          \
  static void TORCH_LIBRARY_init_##ns(torch::Library&);                               \
  static const torch::detail::TorchLibraryInit TORCH_LIBRARY_static_init_##ns(        \
      torch::Library::DEF, &TORCH_LIBRARY_init_##ns, #ns, std::nullopt, __FILE__, __LINE__); \
  void TORCH_LIBRARY_init_##ns(torch::Library& m)

#define TORCH_LIBRARY_FRAGMENT(ns, m) _TORCH_LIBRARY_FRAGMENT(ns, m, C10_UID)
#define _TORCH_LIBRARY_FRAGMENT(ns, m, uid)                                                      \
  static void C10_CONCATENATE(TORCH_LIBRARY_FRAGMENT_init_##ns##_, uid)(torch::Library&);      \
  static const torch::detail::TorchLibraryInit C10_CONCATENATE(                                 \
      TORCH_LIBRARY_FRAGMENT_static_init_##ns##_, uid)(                                          \
      torch::Library::FRAGMENT, &C10_CONCATENATE(TORCH_LIBRARY_FRAGMENT_init_##ns##_, uid), #ns, \
      std::nullopt, __FILE__, __LINE__);                                                         \
  void C10_CONCATENATE(TORCH_LIBRARY_FRAGMENT_init_##ns##_, uid)(torch::Library& m)

#define TORCH_LIBRARY_IMPL(ns, k, m) _TORCH_LIBRARY_IMPL(ns, k, m, C10_UID)
#define _TORCH_LIBRARY_IMPL(ns, k, m, uid)                                                         \
  static void C10_CONCATENATE(TORCH_LIBRARY_IMPL_init_##ns##_##k##_, uid)(torch::Library&);      \
  static const torch::detail::TorchLibraryInit C10_CONCATENATE(                                    \
      TORCH_LIBRARY_IMPL_static_init_##ns##_##k##_, uid)(                                          \
      torch::Library::IMPL, &C10_CONCATENATE(TORCH_LIBRARY_IMPL_init_##ns##_##k##_, uid), #ns,     \
      std::make_optional(c10::DispatchKey::k), __FILE__, __LINE__);                                \
  void C10_CONCATENATE(TORCH_LIBRARY_IMPL_init_##ns##_##k##_, uid)(torch::Library& m)
