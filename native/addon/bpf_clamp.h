#pragma once
#include <napi.h>

#include <cstdint>
#include <string>

namespace trickle {

// The loaded sock_ops program and its maps, owned by one addon instance (no static globals).
// Links and fds are closed explicitly by Close() and by the destructor.
class BpfClamp {
 public:
  BpfClamp() = default;
  BpfClamp(const BpfClamp&) = delete;
  BpfClamp& operator=(const BpfClamp&) = delete;
  ~BpfClamp();

  static bool Compiled();
  static std::string NotCompiledReason();

  // Loads the program, pins its maps (and link) under pinDir, attaches it to the cgroup unless a
  // pinned link shows it is attached already (then this build's program replaces the link's if it
  // differs). Returns true when this call attached it.
  bool LoadAndAttach(Napi::Env env, const std::string& cgroupPath, const std::string& pinDir);
  // Opens maps pinned by an earlier LoadAndAttach (possibly by another, privileged, process).
  void OpenPinned(Napi::Env env, const std::string& pinDir);
  // Detaches: destroys the in-process link and removes the pinned link and maps.
  void Unpin(Napi::Env env, const std::string& pinDir);
  void Close();

  // `clampRtt`: enum trickle_clamp_rtt (the RTT a rate's clamp is computed from).
  void SetTarget(Napi::Env env, uint64_t cookie, uint32_t mode, uint64_t rateBytesPerSec, uint32_t gainMilli,
                 uint32_t minPackets, uint32_t fixedPackets, uint32_t clampRtt);
  static constexpr size_t kSchedulePieces = 64;
  // Hands one response's throttling schedule to the program (TRICKLE_MODE_SCHEDULE, or
  // TRICKLE_MODE_PACE_SCHEDULE: paced, no clamp); keeps what the kernel applied so far (clamp,
  // pacing rate, initial window). `pieces` holds (end, rate, due) triples.
  void SetSchedule(Napi::Env env, uint64_t cookie, uint32_t mode, uint64_t baseAcked, uint32_t throttleOffset,
                   uint32_t graceUs, uint32_t gainMilli, uint32_t minPackets, uint32_t clampRtt, const uint32_t* pieces,
                   size_t pieceCount);
  // Asks the program for TCP_BPF_IW on the socket's first data segment; keeps the clamp fields.
  void SetInitialWindow(Napi::Env env, uint64_t cookie, uint32_t packets);
  Napi::Value GetTarget(Napi::Env env, uint64_t cookie);
  // What the program kept of a scheduled response whose socket closed under it (undefined: none);
  // taken once: the record is deleted.
  Napi::Value TakeClosed(Napi::Env env, uint64_t cookie);
  bool DeleteTarget(Napi::Env env, uint64_t cookie);
  uint32_t CountEntries(Napi::Env env, int fd, const char* mapName);
  Napi::Object Stats(Napi::Env env);
  bool IsOpen() const { return targets_fd_ >= 0; }

 private:
  void RequireOpen(Napi::Env env) const;
  int targets_fd_ = -1;
  int stats_fd_ = -1;
  int closed_fd_ = -1;
  void* skeleton_ = nullptr;
  void* link_ = nullptr;
};

}  // namespace trickle
