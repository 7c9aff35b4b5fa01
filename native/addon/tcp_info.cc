// struct tcp_info is append-only ABI. The running kernel returns more than Debian's 6.1 headers
// define (280 bytes on 6.18 vs 232), so fields are read at their ABI offsets, each only when the
// returned length covers it.
#include "tcp_info.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cstdint>
#include <cstring>
#include <limits>

#include "errors.h"

namespace trickle {
namespace {

enum class Width { U8, U16, U32, U64 };

struct Field {
  const char* name;
  size_t offset;
  Width width;
  // Multiplier turning the kernel's unit into the name's unit (e.g. bytes/s -> bits/s).
  double scale;
};

// Offsets from include/uapi/linux/tcp.h (checked against the running kernel's BTF).
constexpr Field kFields[] = {
    {"state", 0, Width::U8, 1},
    {"caState", 1, Width::U8, 1},
    {"retransmits", 2, Width::U8, 1},
    {"probes", 3, Width::U8, 1},
    {"backoff", 4, Width::U8, 1},
    {"options", 5, Width::U8, 1},
    {"rtoUs", 8, Width::U32, 1},
    {"atoUs", 12, Width::U32, 1},
    {"mss", 16, Width::U32, 1},
    {"rcvMss", 20, Width::U32, 1},
    {"unacked", 24, Width::U32, 1},
    {"sacked", 28, Width::U32, 1},
    {"lost", 32, Width::U32, 1},
    {"retrans", 36, Width::U32, 1},
    {"lastDataSentMs", 44, Width::U32, 1},
    {"lastAckSentMs", 48, Width::U32, 1},
    {"lastDataRecvMs", 52, Width::U32, 1},
    {"lastAckRecvMs", 56, Width::U32, 1},
    {"pmtu", 60, Width::U32, 1},
    {"rcvSsthresh", 64, Width::U32, 1},
    {"rttUs", 68, Width::U32, 1},
    {"rttVarUs", 72, Width::U32, 1},
    {"ssthresh", 76, Width::U32, 1},
    {"cwnd", 80, Width::U32, 1},
    {"advmss", 84, Width::U32, 1},
    {"reordering", 88, Width::U32, 1},
    {"rcvRttUs", 92, Width::U32, 1},
    {"rcvSpace", 96, Width::U32, 1},
    {"totalRetrans", 100, Width::U32, 1},
    {"pacingRateBps", 104, Width::U64, 8},
    {"maxPacingRateBps", 112, Width::U64, 8},
    {"bytesAcked", 120, Width::U64, 1},
    {"bytesReceived", 128, Width::U64, 1},
    {"segsOut", 136, Width::U32, 1},
    {"segsIn", 140, Width::U32, 1},
    {"notsentBytes", 144, Width::U32, 1},
    {"minRttUs", 148, Width::U32, 1},
    {"dataSegsIn", 152, Width::U32, 1},
    {"dataSegsOut", 156, Width::U32, 1},
    {"deliveryRateBps", 160, Width::U64, 8},
    {"busyTimeUs", 168, Width::U64, 1},
    {"rwndLimitedUs", 176, Width::U64, 1},
    {"sndbufLimitedUs", 184, Width::U64, 1},
    {"delivered", 192, Width::U32, 1},
    {"deliveredCe", 196, Width::U32, 1},
    {"bytesSent", 200, Width::U64, 1},
    {"bytesRetrans", 208, Width::U64, 1},
    {"dsackDups", 216, Width::U32, 1},
    {"reordSeen", 220, Width::U32, 1},
    {"rcvOoopack", 224, Width::U32, 1},
    {"sndWnd", 228, Width::U32, 1},
    {"rcvWnd", 232, Width::U32, 1},
    {"rehash", 236, Width::U32, 1},
    {"totalRto", 240, Width::U16, 1},
    {"totalRtoRecoveries", 242, Width::U16, 1},
    {"totalRtoTimeMs", 244, Width::U32, 1},
};

constexpr size_t WidthBytes(Width width) {
  switch (width) {
    case Width::U8:
      return 1;
    case Width::U16:
      return 2;
    case Width::U32:
      return 4;
    case Width::U64:
      return 8;
  }
  return 0;
}

double ReadField(const uint8_t* buffer, const Field& field) {
  switch (field.width) {
    case Width::U8:
      return buffer[field.offset];
    case Width::U16: {
      uint16_t v;
      std::memcpy(&v, buffer + field.offset, 2);
      return v;
    }
    case Width::U32: {
      uint32_t v;
      std::memcpy(&v, buffer + field.offset, 4);
      return v;
    }
    case Width::U64: {
      uint64_t v;
      std::memcpy(&v, buffer + field.offset, 8);
      return static_cast<double>(v);
    }
  }
  return 0;
}

}  // namespace

constexpr size_t kFieldCount = sizeof(kFields) / sizeof(kFields[0]);
// After the ABI fields: deliveryRateAppLimited (0/1), sndWscale, rcvWscale.
constexpr const char* kExtraNames[] = {"deliveryRateAppLimited", "sndWscale", "rcvWscale"};
constexpr size_t kSlots = kFieldCount + 3;

Napi::Array TcpInfoFieldNames(Napi::Env env) {
  Napi::Array names = Napi::Array::New(env, kSlots);
  for (size_t i = 0; i < kFieldCount; i++) names.Set(static_cast<uint32_t>(i), Napi::String::New(env, kFields[i].name));
  for (size_t i = 0; i < 3; i++)
    names.Set(static_cast<uint32_t>(kFieldCount + i), Napi::String::New(env, kExtraNames[i]));
  return names;
}

size_t ReadTcpInfoInto(Napi::Env env, int fd, double* out, size_t slots) {
  if (slots < kSlots) throw ArgumentError(env, "output array too small for TCP_INFO");
  alignas(8) uint8_t buffer[512];
  std::memset(buffer, 0, sizeof(buffer));
  socklen_t length = sizeof(buffer);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, buffer, &length) != 0) {
    throw SyscallError(env, "getsockopt", errno, "TCP_INFO");
  }
  const double missing = std::numeric_limits<double>::quiet_NaN();
  for (size_t i = 0; i < kFieldCount; i++) {
    const Field& field = kFields[i];
    out[i] = missing;
    if (field.offset + WidthBytes(field.width) > length) continue;
    double value = ReadField(buffer, field);
    // ~0 is the kernel's "no limit" for max_pacing_rate: report it as missing, not 1.5e20.
    if (field.width == Width::U64 && value >= 1.8e19) continue;
    out[i] = value * field.scale;
  }
  out[kFieldCount] = length > 7 ? (buffer[7] & 1) : missing;
  out[kFieldCount + 1] = length > 6 ? (buffer[6] & 0x0f) : missing;
  out[kFieldCount + 2] = length > 6 ? (buffer[6] >> 4) : missing;
  return length;
}

}  // namespace trickle
