#pragma once
#include <napi.h>

namespace trickle {

// TCP_INFO read by the length the kernel returns. Values go into `out` (a Float64Array of at
// least TcpInfoFieldNames().size() slots) in field order, NaN for fields the kernel did not
// return; JS builds the object. Filling a typed array is ~40x cheaper than 56 Napi property sets.
// Returns the number of bytes the kernel returned.
size_t ReadTcpInfoInto(Napi::Env env, int fd, double* out, size_t slots);
Napi::Array TcpInfoFieldNames(Napi::Env env);

}  // namespace trickle
