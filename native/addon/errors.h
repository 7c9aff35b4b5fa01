// Errors thrown to JavaScript: syscall failures carry code (errno name), errno (negative, like
// Node's own), and syscall; argument errors are TypeError/RangeError with a NATIVE_ERR_* code.
#pragma once
#include <napi.h>
#include <cerrno>
#include <cstring>
#include <string>

namespace trickle {

inline Napi::Error SyscallError(Napi::Env env, const char* syscall, int err, const std::string& detail = "") {
  const char* name = strerrorname_np(err);
  std::string message =
      std::string(syscall) + " failed: " + std::strerror(err) + (detail.empty() ? "" : " (" + detail + ")");
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, name != nullptr ? name : "EUNKNOWN"));
  error.Set("errno", Napi::Number::New(env, -err));
  error.Set("syscall", Napi::String::New(env, syscall));
  return error;
}

inline Napi::Error ArgumentError(Napi::Env env, const std::string& message) {
  Napi::Error error = Napi::TypeError::New(env, message);
  error.Set("code", Napi::String::New(env, "NATIVE_ERR_ARGUMENT"));
  return error;
}

}  // namespace trickle
