// libbpf side of the clamp: open/load/attach with goto-style cleanup (libbpf-bootstrap style),
// map pinning for the privilege split, and map operations keyed by socket cookie.
#include "bpf_clamp.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "errors.h"

#ifdef TRICKLE_HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "cwnd_clamp.h"
#include "cwnd_clamp.skel.h"
#endif

namespace trickle {

namespace {
const char* kTargetsPin = "/trickle_targets";
const char* kStatsPin = "/trickle_stats";
const char* kLinkPin = "/trickle_link";
}  // namespace

bool BpfClamp::Compiled() {
#ifdef TRICKLE_HAVE_BPF
  return true;
#else
  return false;
#endif
}

std::string BpfClamp::NotCompiledReason() {
#ifdef TRICKLE_HAVE_BPF
  return "";
#else
  return "the addon was built without libbpf/clang/bpftool (see native/out/native-status.json)";
#endif
}

BpfClamp::~BpfClamp() { Close(); }

void BpfClamp::Close() {
#ifdef TRICKLE_HAVE_BPF
  if (link_ != nullptr) bpf_link__destroy(static_cast<bpf_link*>(link_));
  if (skeleton_ != nullptr) cwnd_clamp_bpf__destroy(static_cast<cwnd_clamp_bpf*>(skeleton_));
#endif
  link_ = nullptr;
  skeleton_ = nullptr;
  if (targets_fd_ >= 0) close(targets_fd_);
  if (stats_fd_ >= 0) close(stats_fd_);
  targets_fd_ = -1;
  stats_fd_ = -1;
}

void BpfClamp::RequireOpen(Napi::Env env) const {
  if (targets_fd_ < 0) {
    Napi::Error error = Napi::Error::New(env, "the BPF clamp is not attached: call attach() first");
    error.Set("code", Napi::String::New(env, "NATIVE_ERR_BPF_NOT_ATTACHED"));
    throw error;
  }
}

#ifdef TRICKLE_HAVE_BPF

bool BpfClamp::LoadAndAttach(Napi::Env env, const std::string& cgroupPath, const std::string& pinDir) {
  Close();
  std::string failedCall;
  std::string detail;
  int err = 0;
  int cgroupFd = -1;
  bool attached = false;
  cwnd_clamp_bpf* skel = nullptr;
  bpf_link* link = nullptr;
  const std::string linkPath = pinDir + kLinkPin;
  const bool alreadyAttached = !pinDir.empty() && access(linkPath.c_str(), F_OK) == 0;

  skel = cwnd_clamp_bpf__open();
  if (skel == nullptr) {
    err = errno;
    failedCall = "bpf_object__open";
    goto cleanup;
  }
  if (!pinDir.empty()) {
    // Pin paths make libbpf reuse maps pinned by an earlier setup instead of creating new ones.
    if ((err = -bpf_map__set_pin_path(skel->maps.trickle_targets, (pinDir + kTargetsPin).c_str())) != 0 ||
        (err = -bpf_map__set_pin_path(skel->maps.trickle_stats, (pinDir + kStatsPin).c_str())) != 0) {
      failedCall = "bpf_map__set_pin_path";
      goto cleanup;
    }
  }
  if ((err = -cwnd_clamp_bpf__load(skel)) != 0) {
    failedCall = "bpf_object__load";
    detail = "is this process privileged (CAP_BPF, CAP_NET_ADMIN)?";
    goto cleanup;
  }
  if (!alreadyAttached) {
    cgroupFd = open(cgroupPath.c_str(), O_RDONLY | O_DIRECTORY);
    if (cgroupFd < 0) {
      err = errno;
      failedCall = "open";
      detail = cgroupPath + " (a cgroup v2 directory)";
      goto cleanup;
    }
    link = bpf_program__attach_cgroup(skel->progs.trickle_sockops, cgroupFd);
    if (link == nullptr) {
      err = errno;
      failedCall = "bpf_program__attach_cgroup";
      detail = cgroupPath;
      goto cleanup;
    }
    if (!pinDir.empty() && (err = -bpf_link__pin(link, linkPath.c_str())) != 0) {
      failedCall = "bpf_link__pin";
      detail = linkPath;
      goto cleanup;
    }
    attached = true;
  }
  targets_fd_ = dup(bpf_map__fd(skel->maps.trickle_targets));
  stats_fd_ = dup(bpf_map__fd(skel->maps.trickle_stats));
  skeleton_ = skel;
  link_ = link;
  skel = nullptr;
  link = nullptr;

cleanup:
  if (cgroupFd >= 0) close(cgroupFd);
  if (link != nullptr) bpf_link__destroy(link);
  if (skel != nullptr) cwnd_clamp_bpf__destroy(skel);
  if (!failedCall.empty()) throw SyscallError(env, failedCall.c_str(), err, detail);
  return attached;
}

void BpfClamp::OpenPinned(Napi::Env env, const std::string& pinDir) {
  Close();
  const std::string targets = pinDir + kTargetsPin;
  const std::string stats = pinDir + kStatsPin;
  int targetsFd = bpf_obj_get(targets.c_str());
  if (targetsFd < 0) throw SyscallError(env, "bpf_obj_get", errno, targets);
  int statsFd = bpf_obj_get(stats.c_str());
  if (statsFd < 0) {
    int err = errno;
    close(targetsFd);
    throw SyscallError(env, "bpf_obj_get", err, stats);
  }
  targets_fd_ = targetsFd;
  stats_fd_ = statsFd;
}

void BpfClamp::Unpin(Napi::Env env, const std::string& pinDir) {
  Close();
  for (const char* name : {kLinkPin, kTargetsPin, kStatsPin}) {
    const std::string path = pinDir + name;
    if (unlink(path.c_str()) != 0 && errno != ENOENT) throw SyscallError(env, "unlink", errno, path);
  }
}

void BpfClamp::SetTarget(Napi::Env env, uint64_t cookie, uint32_t mode, uint64_t rateBytesPerSec, uint32_t gainMilli, uint32_t minPackets, uint32_t fixedPackets) {
  RequireOpen(env);
  trickle_clamp_target target{};
  trickle_clamp_target previous{};
  // Keep what the kernel has applied so far: a gradual release doubles from it.
  if (bpf_map_lookup_elem(targets_fd_, &cookie, &previous) == 0) {
    target.applied_packets = previous.applied_packets;
    target.updates = previous.updates;
    target.last_step_ns = previous.last_step_ns;
    target.initial_window_packets = previous.initial_window_packets;
    target.initial_window_result = previous.initial_window_result;
  }
  target.mode = mode;
  target.rate_bytes_per_sec = rateBytesPerSec;
  target.gain_milli = gainMilli;
  target.min_packets = minPackets;
  target.fixed_packets = fixedPackets;
  if (bpf_map_update_elem(targets_fd_, &cookie, &target, BPF_ANY) != 0) throw SyscallError(env, "bpf_map_update_elem", errno, "trickle_targets");
}

void BpfClamp::SetInitialWindow(Napi::Env env, uint64_t cookie, uint32_t packets) {
  RequireOpen(env);
  trickle_clamp_target target{};
  if (bpf_map_lookup_elem(targets_fd_, &cookie, &target) != 0 && errno != ENOENT) throw SyscallError(env, "bpf_map_lookup_elem", errno, "trickle_targets");
  target.initial_window_packets = packets;
  target.initial_window_result = 0;
  if (bpf_map_update_elem(targets_fd_, &cookie, &target, BPF_ANY) != 0) throw SyscallError(env, "bpf_map_update_elem", errno, "trickle_targets");
}

Napi::Value BpfClamp::GetTarget(Napi::Env env, uint64_t cookie) {
  RequireOpen(env);
  trickle_clamp_target target{};
  if (bpf_map_lookup_elem(targets_fd_, &cookie, &target) != 0) {
    if (errno == ENOENT) return env.Undefined();
    throw SyscallError(env, "bpf_map_lookup_elem", errno, "trickle_targets");
  }
  Napi::Object result = Napi::Object::New(env);
  result.Set("mode", Napi::Number::New(env, target.mode));
  result.Set("rateBytesPerSec", Napi::Number::New(env, static_cast<double>(target.rate_bytes_per_sec)));
  result.Set("gainMilli", Napi::Number::New(env, target.gain_milli));
  result.Set("minPackets", Napi::Number::New(env, target.min_packets));
  result.Set("fixedPackets", Napi::Number::New(env, target.fixed_packets));
  result.Set("appliedPackets", Napi::Number::New(env, target.applied_packets));
  result.Set("updates", Napi::Number::New(env, target.updates));
  result.Set("initialWindowPackets", Napi::Number::New(env, target.initial_window_packets));
  result.Set("initialWindowResult", Napi::Number::New(env, target.initial_window_result));
  return result;
}

bool BpfClamp::DeleteTarget(Napi::Env env, uint64_t cookie) {
  RequireOpen(env);
  if (bpf_map_delete_elem(targets_fd_, &cookie) == 0) return true;
  if (errno == ENOENT) return false;
  throw SyscallError(env, "bpf_map_delete_elem", errno, "trickle_targets");
}

uint32_t BpfClamp::CountTargets(Napi::Env env) {
  RequireOpen(env);
  uint32_t count = 0;
  uint64_t key = 0;
  uint64_t next = 0;
  const void* previous = nullptr;
  while (bpf_map_get_next_key(targets_fd_, previous, &next) == 0) {
    count++;
    key = next;
    previous = &key;
  }
  if (errno != ENOENT) throw SyscallError(env, "bpf_map_get_next_key", errno, "trickle_targets");
  return count;
}

Napi::Object BpfClamp::Stats(Napi::Env env) {
  RequireOpen(env);
  const int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) throw SyscallError(env, "libbpf_num_possible_cpus", -cpus);
  const char* names[TRICKLE_STAT_COUNT] = {"rttSamples", "clampUpdates", "closedRemoved", "setsockoptErrors"};
  Napi::Object stats = Napi::Object::New(env);
  std::vector<uint64_t> perCpu(static_cast<size_t>(cpus));
  for (uint32_t key = 0; key < TRICKLE_STAT_COUNT; key++) {
    if (bpf_map_lookup_elem(stats_fd_, &key, perCpu.data()) != 0) throw SyscallError(env, "bpf_map_lookup_elem", errno, "trickle_stats");
    double total = 0;
    for (uint64_t value : perCpu) total += static_cast<double>(value);
    stats.Set(names[key], Napi::Number::New(env, total));
  }
  stats.Set("entries", Napi::Number::New(env, CountTargets(env)));
  return stats;
}

#else

namespace {
[[noreturn]] void NotCompiled(Napi::Env env) {
  Napi::Error error = Napi::Error::New(env, BpfClamp::NotCompiledReason());
  error.Set("code", Napi::String::New(env, "NATIVE_ERR_BPF_UNAVAILABLE"));
  throw error;
}
}  // namespace

bool BpfClamp::LoadAndAttach(Napi::Env env, const std::string&, const std::string&) { NotCompiled(env); }
void BpfClamp::OpenPinned(Napi::Env env, const std::string&) { NotCompiled(env); }
void BpfClamp::Unpin(Napi::Env env, const std::string&) { NotCompiled(env); }
void BpfClamp::SetTarget(Napi::Env env, uint64_t, uint32_t, uint64_t, uint32_t, uint32_t, uint32_t) { NotCompiled(env); }
void BpfClamp::SetInitialWindow(Napi::Env env, uint64_t, uint32_t) { NotCompiled(env); }
Napi::Value BpfClamp::GetTarget(Napi::Env env, uint64_t) { NotCompiled(env); }
bool BpfClamp::DeleteTarget(Napi::Env env, uint64_t) { NotCompiled(env); }
uint32_t BpfClamp::CountTargets(Napi::Env env) { NotCompiled(env); }
Napi::Object BpfClamp::Stats(Napi::Env env) { NotCompiled(env); }

#endif

}  // namespace trickle
