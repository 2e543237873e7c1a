// ember's C++ extension API: the AT_DISPATCH_* macros, which run a lambda with `scalar_t` bound
// to the C++ type of a runtime ScalarType (ATen/Dispatch.h). Half and BFloat16 have no C++
// type in these headers, so the *_AND_HALF / *_AND2 variants are not provided.
#pragma once

#include "core.h"

namespace ember_ext __attribute__((visibility("hidden"))) {
namespace detail {
inline c10::ScalarType dispatch_type(c10::ScalarType t) { return t; }
inline c10::ScalarType dispatch_type(c10::TypeMeta t) { return t.toScalarType(); }
}  // namespace detail
}  // namespace ember_ext

#define AT_PRIVATE_CASE_TYPE(enum_type, type, ...) \
  case enum_type: {                                \
    using scalar_t = type;                         \
    return __VA_ARGS__();                          \
  }
#define AT_DISPATCH_CASE_FAIL_(NAME, TYPE)                                                   \
  default:                                                                                  \
    throw ::c10::NotImplementedError(::c10::str('"', NAME, "\" not implemented for '",      \
                                                ::c10::toString(TYPE), "'"));

#define AT_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...)                                  \
  [&] {                                                                              \
    const auto _st = ::ember_ext::detail::dispatch_type(TYPE);                       \
    switch (_st) {                                                                   \
      AT_PRIVATE_CASE_TYPE(::c10::ScalarType::Double, double, __VA_ARGS__)           \
      AT_PRIVATE_CASE_TYPE(::c10::ScalarType::Float, float, __VA_ARGS__)             \
      AT_DISPATCH_CASE_FAIL_(NAME, _st)                                              \
    }                                                                                \
  }()

#define AT_DISPATCH_INTEGRAL_TYPES(TYPE, NAME, ...)                                  \
  [&] {                                                                              \
    const auto _st = ::ember_ext::detail::dispatch_type(TYPE);                       \
    switch (_st) {                                                                   \
      AT_PRIVATE_CASE_TYPE(::c10::ScalarType::Byte, uint8_t, __VA_ARGS__)            \
      AT_PRIVATE_CASE_TYPE(::c10::ScalarType::Char, int8_t, __VA_ARGS__)             \
      AT_PRIVATE_CASE_TYPE(::c10::ScalarType::Short, int16_t, __VA_ARGS__)           \
      AT_PRIVATE_CASE_TYPE(::c10::ScalarType::Int, int32_t, __VA_ARGS__)             \
      AT_PRIVATE_CASE_TYPE(::c10::ScalarType::Long, int64_t, __VA_ARGS__)            \
      AT_DISPATCH_CASE_FAIL_(NAME, _st)                                              \
    }                                                                                \
  }()

#define AT_DISPATCH_ALL_TYPES(TYPE, NAME, ...)                                       \
  [&] {                                                                              \
    const auto _st = ::ember_ext::detail::dispatch_type(TYPE);                       \
    switch (_st) {                                                                   \
      AT_PRIVATE_CASE_TYPE(::c10::ScalarType::Byte, uint8_t, __VA_ARGS__)            \
      AT_PRIVATE_CASE_TYPE(::c10::ScalarType::Char, int8_t, __VA_ARGS__)             \
      AT_PRIVATE_CASE_TYPE(::c10::ScalarType::Short, int16_t, __VA_ARGS__)           \
      AT_PRIVATE_CASE_TYPE(::c10::ScalarType::Int, int32_t, __VA_ARGS__)             \
      AT_PRIVATE_CASE_TYPE(::c10::ScalarType::Long, int64_t, __VA_ARGS__)            \
      AT_PRIVATE_CASE_TYPE(::c10::ScalarType::Double, double, __VA_ARGS__)           \
      AT_PRIVATE_CASE_TYPE(::c10::ScalarType::Float, float, __VA_ARGS__)             \
      AT_DISPATCH_CASE_FAIL_(NAME, _st)                                              \
    }                                                                                \
  }()
