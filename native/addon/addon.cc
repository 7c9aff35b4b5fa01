// The Trickle native addon: TCP_INFO, per-socket options and the eBPF cwnd clamp.
// All state lives in the addon instance (Napi::Addon), so worker threads each get their own.
#include <napi.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "bpf_clamp.h"
#include "errors.h"
#include "file_sender.h"
#include "tcp_info.h"

namespace trickle {
namespace {

int FdArgument(const Napi::CallbackInfo& info, size_t index = 0) {
  Napi::Env env = info.Env();
  if (info.Length() <= index || !info[index].IsNumber())
    throw ArgumentError(env, "expected a file descriptor (a non-negative integer)");
  double value = info[index].As<Napi::Number>().DoubleValue();
  if (!std::isfinite(value) || value < 0 || value != std::floor(value) || value > 2147483647)
    throw ArgumentError(env, "expected a file descriptor (a non-negative integer)");
  return static_cast<int>(value);
}

uint64_t CookieArgument(const Napi::CallbackInfo& info, size_t index) {
  Napi::Env env = info.Env();
  if (info.Length() <= index || !info[index].IsBigInt()) throw ArgumentError(env, "expected a socket cookie (bigint)");
  bool lossless = false;
  uint64_t cookie = info[index].As<Napi::BigInt>().Uint64Value(&lossless);
  if (!lossless) throw ArgumentError(env, "socket cookie out of range");
  return cookie;
}

uint32_t U32Argument(const Napi::CallbackInfo& info, size_t index, const char* name) {
  Napi::Env env = info.Env();
  if (info.Length() <= index || !info[index].IsNumber())
    throw ArgumentError(env, std::string(name) + " must be a number");
  double value = info[index].As<Napi::Number>().DoubleValue();
  if (!std::isfinite(value) || value < 0 || value > 4294967295.0 || value != std::floor(value)) {
    Napi::Error error = Napi::RangeError::New(env, std::string(name) + " must be an integer from 0 to 2^32-1");
    error.Set("code", Napi::String::New(env, "NATIVE_ERR_ARGUMENT"));
    throw error;
  }
  return static_cast<uint32_t>(value);
}

uint64_t ByteCountArgument(const Napi::CallbackInfo& info, size_t index, const char* name) {
  Napi::Env env = info.Env();
  if (info.Length() <= index || !info[index].IsNumber())
    throw ArgumentError(env, std::string(name) + " must be a number");
  double value = info[index].As<Napi::Number>().DoubleValue();
  if (!std::isfinite(value) || value < 0 || value > 9007199254740991.0 || value != std::floor(value)) {
    Napi::Error error = Napi::RangeError::New(env, std::string(name) + " must be a whole number of bytes");
    error.Set("code", Napi::String::New(env, "NATIVE_ERR_ARGUMENT"));
    throw error;
  }
  return static_cast<uint64_t>(value);
}

std::string StringArgument(const Napi::CallbackInfo& info, size_t index, const char* name) {
  if (info.Length() <= index || !info[index].IsString())
    throw ArgumentError(info.Env(), std::string(name) + " must be a string");
  return info[index].As<Napi::String>().Utf8Value();
}

}  // namespace

class TrickleNative : public Napi::Addon<TrickleNative> {
 public:
  TrickleNative(Napi::Env env, Napi::Object exports) {
    DefineAddon(exports, {
                             InstanceMethod("tcpInfoInto", &TrickleNative::TcpInfoInto),
                             InstanceMethod("tcpInfoFields", &TrickleNative::TcpInfoFields),
                             InstanceMethod("setMaxPacingRate", &TrickleNative::SetMaxPacingRate),
                             InstanceMethod("getMaxPacingRate", &TrickleNative::GetMaxPacingRate),
                             InstanceMethod("setCongestionControl", &TrickleNative::SetCongestionControl),
                             InstanceMethod("getCongestionControl", &TrickleNative::GetCongestionControl),
                             InstanceMethod("setNotsentLowat", &TrickleNative::SetNotsentLowat),
                             InstanceMethod("raiseSendBuffer", &TrickleNative::RaiseSendBuffer),
                             InstanceMethod("socketCookie", &TrickleNative::SocketCookie),
                             InstanceMethod("bpfCompiled", &TrickleNative::BpfCompiled),
                             InstanceMethod("bpfLoadAndAttach", &TrickleNative::BpfLoadAndAttach),
                             InstanceMethod("bpfOpenPinned", &TrickleNative::BpfOpenPinned),
                             InstanceMethod("bpfUnpin", &TrickleNative::BpfUnpin),
                             InstanceMethod("bpfClose", &TrickleNative::BpfClose),
                             InstanceMethod("bpfSetTarget", &TrickleNative::BpfSetTarget),
                             InstanceMethod("bpfGetTarget", &TrickleNative::BpfGetTarget),
                             InstanceMethod("bpfTakeClosed", &TrickleNative::BpfTakeClosed),
                             InstanceMethod("bpfSetSchedule", &TrickleNative::BpfSetSchedule),
                             InstanceMethod("bpfSetInitialWindow", &TrickleNative::BpfSetInitialWindow),
                             InstanceMethod("bpfDeleteTarget", &TrickleNative::BpfDeleteTarget),
                             InstanceMethod("bpfStats", &TrickleNative::BpfStats),
                             InstanceMethod("fileSendOpen", &TrickleNative::FileSendOpen),
                             InstanceMethod("fileSendWrite", &TrickleNative::FileSendWrite),
                             InstanceMethod("fileSendClose", &TrickleNative::FileSendClose),
                         });
    (void)env;
  }

 private:
  // (fd, Float64Array) -> bytes the kernel returned
  Napi::Value TcpInfoInto(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = FdArgument(info);
    if (info.Length() < 2 || !info[1].IsTypedArray() ||
        info[1].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array) {
      throw ArgumentError(env, "expected a Float64Array for the TCP_INFO values");
    }
    Napi::Float64Array out = info[1].As<Napi::Float64Array>();
    return Napi::Number::New(env, static_cast<double>(ReadTcpInfoInto(env, fd, out.Data(), out.ElementLength())));
  }

  Napi::Value TcpInfoFields(const Napi::CallbackInfo& info) { return TcpInfoFieldNames(info.Env()); }

  // bytesPerSecond: a number, or null for "no limit" (the kernel's ~0).
  Napi::Value SetMaxPacingRate(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = FdArgument(info);
    uint64_t rate = ~0ULL;
    if (info.Length() < 2 || (!info[1].IsNull() && !info[1].IsNumber()))
      throw ArgumentError(env, "rate must be bytes per second (number) or null");
    if (info[1].IsNumber()) {
      double value = info[1].As<Napi::Number>().DoubleValue();
      if (!std::isfinite(value) || value < 1 || value >= 1.8e19) {
        Napi::Error error = Napi::RangeError::New(env, "rate must be a finite number of bytes per second >= 1");
        error.Set("code", Napi::String::New(env, "NATIVE_ERR_ARGUMENT"));
        throw error;
      }
      rate = static_cast<uint64_t>(value);
    }
    if (setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, sizeof(rate)) != 0)
      throw SyscallError(env, "setsockopt", errno, "SO_MAX_PACING_RATE");
    return env.Undefined();
  }

  Napi::Value GetMaxPacingRate(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    uint64_t rate = 0;
    socklen_t length = sizeof(rate);
    if (getsockopt(FdArgument(info), SOL_SOCKET, SO_MAX_PACING_RATE, &rate, &length) != 0)
      throw SyscallError(env, "getsockopt", errno, "SO_MAX_PACING_RATE");
    if (length == 4) rate = static_cast<uint32_t>(rate);
    if (rate == ~0ULL || (length == 4 && rate == 0xffffffffULL)) return env.Null();
    return Napi::Number::New(env, static_cast<double>(rate));
  }

  Napi::Value SetCongestionControl(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = FdArgument(info);
    std::string name = StringArgument(info, 1, "congestion control");
    if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.c_str(), name.size()) != 0)
      throw SyscallError(env, "setsockopt", errno, "TCP_CONGESTION " + name);
    return env.Undefined();
  }

  Napi::Value GetCongestionControl(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    char name[32] = {0};
    socklen_t length = sizeof(name) - 1;
    if (getsockopt(FdArgument(info), IPPROTO_TCP, TCP_CONGESTION, name, &length) != 0)
      throw SyscallError(env, "getsockopt", errno, "TCP_CONGESTION");
    return Napi::String::New(env, name);
  }

  Napi::Value SetNotsentLowat(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = FdArgument(info);
    int bytes = static_cast<int>(U32Argument(info, 1, "bytes"));
    if (setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &bytes, sizeof(bytes)) != 0)
      throw SyscallError(env, "setsockopt", errno, "TCP_NOTSENT_LOWAT");
    return env.Undefined();
  }

  // SO_SNDBUF raised to hold `bytes` (the kernel doubles the value for its overhead, and caps it at
  // net.core.wmem_max); never lowered below what autotuning reached. Returns the effective sk_sndbuf.
  Napi::Value RaiseSendBuffer(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = FdArgument(info);
    int bytes = static_cast<int>(std::min<uint32_t>(U32Argument(info, 1, "bytes"), 0x3fffffff));
    int current = 0;
    socklen_t length = sizeof(current);
    if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &current, &length) != 0)
      throw SyscallError(env, "getsockopt", errno, "SO_SNDBUF");
    if (current >= 2 * bytes) return Napi::Number::New(env, current);
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes)) != 0)
      throw SyscallError(env, "setsockopt", errno, "SO_SNDBUF");
    length = sizeof(current);
    if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &current, &length) != 0)
      throw SyscallError(env, "getsockopt", errno, "SO_SNDBUF");
    return Napi::Number::New(env, current);
  }

  Napi::Value SocketCookie(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    uint64_t cookie = 0;
    socklen_t length = sizeof(cookie);
    if (getsockopt(FdArgument(info), SOL_SOCKET, SO_COOKIE, &cookie, &length) != 0)
      throw SyscallError(env, "getsockopt", errno, "SO_COOKIE");
    return Napi::BigInt::New(env, cookie);
  }

  Napi::Value BpfCompiled(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Object result = Napi::Object::New(env);
    result.Set("compiled", Napi::Boolean::New(env, BpfClamp::Compiled()));
    if (!BpfClamp::Compiled()) result.Set("reason", Napi::String::New(env, BpfClamp::NotCompiledReason()));
    return result;
  }

  Napi::Value BpfLoadAndAttach(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), clamp_.LoadAndAttach(info.Env(), StringArgument(info, 0, "cgroupPath"),
                                                               StringArgument(info, 1, "pinDir")));
  }

  Napi::Value BpfOpenPinned(const Napi::CallbackInfo& info) {
    clamp_.OpenPinned(info.Env(), StringArgument(info, 0, "pinDir"));
    return info.Env().Undefined();
  }

  Napi::Value BpfUnpin(const Napi::CallbackInfo& info) {
    clamp_.Unpin(info.Env(), StringArgument(info, 0, "pinDir"));
    return info.Env().Undefined();
  }

  Napi::Value BpfClose(const Napi::CallbackInfo& info) {
    clamp_.Close();
    return info.Env().Undefined();
  }

  // (cookie, mode, rateBytesPerSec, gainMilli, minPackets, fixedPackets, clampRtt)
  Napi::Value BpfSetTarget(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    uint64_t cookie = CookieArgument(info, 0);
    uint32_t mode = U32Argument(info, 1, "mode");
    if (info.Length() < 3 || !info[2].IsNumber()) throw ArgumentError(env, "rateBytesPerSec must be a number");
    double rate = info[2].As<Napi::Number>().DoubleValue();
    if (!std::isfinite(rate) || rate < 0 || rate >= 1.8e19)
      throw ArgumentError(env, "rateBytesPerSec must be finite and >= 0");
    clamp_.SetTarget(env, cookie, mode, static_cast<uint64_t>(rate), U32Argument(info, 3, "gainMilli"),
                     U32Argument(info, 4, "minPackets"), U32Argument(info, 5, "fixedPackets"),
                     U32Argument(info, 6, "clampRtt"));
    return env.Undefined();
  }

  // (cookie, mode, baseAcked, throttleOffset, graceUs, gainMilli, minPackets, clampRtt,
  //  Uint32Array of (end, rate, due) triples)
  Napi::Value BpfSetSchedule(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    uint64_t cookie = CookieArgument(info, 0);
    uint32_t mode = U32Argument(info, 1, "mode");
    if (info.Length() < 3 || !info[2].IsNumber()) throw ArgumentError(env, "baseAcked must be a number");
    double base = info[2].As<Napi::Number>().DoubleValue();
    if (!std::isfinite(base) || base < 0 || base > 9007199254740991.0)
      throw ArgumentError(env, "baseAcked must be a byte count >= 0");
    if (info.Length() < 9 || !info[8].IsTypedArray() ||
        info[8].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array) {
      throw ArgumentError(env, "expected a Uint32Array of (end, rate, due) triples");
    }
    Napi::Uint32Array pieces = info[8].As<Napi::Uint32Array>();
    const size_t count = pieces.ElementLength() / 3;
    if (pieces.ElementLength() % 3 != 0 || count == 0 || count > BpfClamp::kSchedulePieces) {
      throw ArgumentError(
          env, "a schedule has 1 to " + std::to_string(BpfClamp::kSchedulePieces) + " (end, rate, due) triples");
    }
    clamp_.SetSchedule(env, cookie, mode, static_cast<uint64_t>(base), U32Argument(info, 3, "throttleOffset"),
                       U32Argument(info, 4, "graceUs"), U32Argument(info, 5, "gainMilli"),
                       U32Argument(info, 6, "minPackets"), U32Argument(info, 7, "clampRtt"), pieces.Data(), count);
    return env.Undefined();
  }

  Napi::Value BpfSetInitialWindow(const Napi::CallbackInfo& info) {
    clamp_.SetInitialWindow(info.Env(), CookieArgument(info, 0), U32Argument(info, 1, "packets"));
    return info.Env().Undefined();
  }

  Napi::Value BpfGetTarget(const Napi::CallbackInfo& info) {
    return clamp_.GetTarget(info.Env(), CookieArgument(info, 0));
  }
  Napi::Value BpfTakeClosed(const Napi::CallbackInfo& info) {
    return clamp_.TakeClosed(info.Env(), CookieArgument(info, 0));
  }

  Napi::Value BpfDeleteTarget(const Napi::CallbackInfo& info) {
    return Napi::Boolean::New(info.Env(), clamp_.DeleteTarget(info.Env(), CookieArgument(info, 0)));
  }

  Napi::Value BpfStats(const Napi::CallbackInfo& info) { return clamp_.Stats(info.Env()); }

  // (socket fd, path, end offset) -> a transfer id
  Napi::Value FileSendOpen(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    int fd = FdArgument(info);
    std::string path = StringArgument(info, 1, "path");
    return Napi::Number::New(env, fileSender_.Open(env, fd, path, ByteCountArgument(info, 2, "endOffset")));
  }

  // (transfer id, offset, length, callback) -> the sendfile calls (all taken at once) or -1 (callback later)
  Napi::Value FileSendWrite(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const uint32_t id = U32Argument(info, 0, "transfer id");
    const uint64_t offset = ByteCountArgument(info, 1, "offset");
    const uint64_t length = ByteCountArgument(info, 2, "length");
    if (info.Length() < 4 || !info[3].IsFunction()) throw ArgumentError(env, "expected a callback");
    return Napi::Number::New(env, fileSender_.Write(env, id, offset, length, info[3].As<Napi::Function>()));
  }

  Napi::Value FileSendClose(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), fileSender_.Close(U32Argument(info, 0, "transfer id")));
  }

  BpfClamp clamp_;
  FileSender fileSender_;
};

}  // namespace trickle

using trickle::TrickleNative;
NODE_API_ADDON(TrickleNative)
