#pragma once
#include <napi.h>

namespace trickle {

// TCP_INFO read by the length the kernel returns: fields past that length are left undefined.
Napi::Object ReadTcpInfo(Napi::Env env, int fd);

}  // namespace trickle
