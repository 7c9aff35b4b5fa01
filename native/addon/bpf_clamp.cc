// libbpf side of the clamp: open/load/attach with goto-style cleanup (libbpf-bootstrap style),
// map pinning for the privilege split, and map operations keyed by socket cookie.
#include "bpf_clamp.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>
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
const char* kClosedPin = "/trickle_closed";
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
  for (int* fd : {&targets_fd_, &stats_fd_, &closed_fd_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

void BpfClamp::RequireOpen(Napi::Env env) const {
  if (targets_fd_ < 0) {
    Napi::Error error = Napi::Error::New(env, "the BPF clamp is not attached: call attach() first");
    error.Set("code", Napi::String::New(env, "NATIVE_ERR_BPF_NOT_ATTACHED"));
    throw error;
  }
}

#ifdef TRICKLE_HAVE_BPF

namespace {
// Whether the map pinned at `path` has the layout this build's program uses (absent counts as yes).
bool PinnedMapMatches(const std::string& path, uint32_t valueSize, uint32_t maxEntries, uint32_t flags) {
  int fd = bpf_obj_get(path.c_str());
  if (fd < 0) return true;
  bpf_map_info info{};
  uint32_t length = sizeof(info);
  bool matches = bpf_obj_get_info_by_fd(fd, &info, &length) == 0 && info.value_size == valueSize &&
                 info.max_entries == maxEntries && info.map_flags == flags;
  close(fd);
  return matches;
}

bool PinnedMapsMatch(const std::string& pinDir) {
  // A generation before trickle_closed pinned targets without it (and laid them out otherwise).
  const bool targetsPinned = access((pinDir + kTargetsPin).c_str(), F_OK) == 0;
  const bool closedPinned = access((pinDir + kClosedPin).c_str(), F_OK) == 0;
  return targetsPinned == closedPinned &&
         PinnedMapMatches(pinDir + kTargetsPin, sizeof(trickle_clamp_target), TRICKLE_MAX_TARGETS, BPF_F_NO_PREALLOC) &&
         PinnedMapMatches(pinDir + kStatsPin, sizeof(uint64_t), TRICKLE_STAT_COUNT, 0) &&
         PinnedMapMatches(pinDir + kClosedPin, sizeof(trickle_closed_phase), TRICKLE_MAX_CLOSED, 0);
}

// Pins left by an older build (another map layout) would be reused by the loader or refused by it:
// detach that generation's program and remove its pins, so this one loads and attaches in its place.
void RemoveStalePins(const std::string& pinDir) {
  const std::string targets = pinDir + kTargetsPin;
  const std::string stats = pinDir + kStatsPin;
  const std::string closed = pinDir + kClosedPin;
  if (PinnedMapsMatch(pinDir)) return;
  const std::string link = pinDir + kLinkPin;
  int linkFd = bpf_obj_get(link.c_str());
  if (linkFd >= 0) {
    bpf_link_detach(linkFd);
    close(linkFd);
  }
  for (const std::string& path : {link, targets, stats, closed}) unlink(path.c_str());
}

// The tag (a hash of the instructions) of a program, or of the program a link runs; empty on failure.
std::vector<uint8_t> ProgramTag(int progFd) {
  bpf_prog_info progInfo{};
  uint32_t length = sizeof(progInfo);
  if (bpf_obj_get_info_by_fd(progFd, &progInfo, &length) != 0) return {};
  return std::vector<uint8_t>(progInfo.tag, progInfo.tag + sizeof(progInfo.tag));
}

std::vector<uint8_t> ProgramTagOfLink(int linkFd) {
  bpf_link_info linkInfo{};
  uint32_t length = sizeof(linkInfo);
  if (bpf_obj_get_info_by_fd(linkFd, &linkInfo, &length) != 0) return {};
  int progFd = bpf_prog_get_fd_by_id(linkInfo.prog_id);
  if (progFd < 0) return {};
  std::vector<uint8_t> tag = ProgramTag(progFd);
  close(progFd);
  return tag;
}

// A new target for the socket that keeps what the kernel has applied so far (a gradual release
// grows from it), the congestion control's ssthresh it answers to and its initial window; the rest zero.
// Not the pacing rate the program set: user space lifts it when a response ends, and a program that
// took its own note for the socket's rate skipped setting the next response's same rate (that response
// left unpaced: sammy's segments at a full buffer, one after another on a kept-alive connection).
trickle_clamp_target CarriedOver(int targetsFd, uint64_t cookie) {
  trickle_clamp_target target{};
  target.pacing_bytes_per_sec = TRICKLE_PACING_UNKNOWN;
  trickle_clamp_target previous{};
  if (bpf_map_lookup_elem(targetsFd, &cookie, &previous) == 0) {
    target.applied_packets = previous.applied_packets;
    target.applied_rtt_us = previous.applied_rtt_us;
    target.applied_mss = previous.applied_mss;
    target.updates = previous.updates;
    target.last_step_ns = previous.last_step_ns;
    target.cc_ssthresh = previous.cc_ssthresh;
    target.initial_window_packets = previous.initial_window_packets;
    target.initial_window_result = previous.initial_window_result;
  }
  return target;
}

// The RTT a rate's clamp is computed from: one the program knows, or the caller's mistake.
void RequireClampRtt(Napi::Env env, uint32_t clampRtt) {
  if (clampRtt != TRICKLE_CLAMP_RTT_SMOOTHED && clampRtt != TRICKLE_CLAMP_RTT_MIN)
    throw ArgumentError(env, "clampRtt is TRICKLE_CLAMP_RTT_SMOOTHED (0) or TRICKLE_CLAMP_RTT_MIN (1), got " +
                                 std::to_string(clampRtt));
}

// Holds this thread's signals while it lives. The verifier gives up with EAGAIN whenever a signal
// is pending, and a sampling profiler (node --cpu-prof: SIGPROF every millisecond) outpaces
// libbpf's retries of a large program; held signals are delivered once it is loaded.
class SignalsHeld {
 public:
  SignalsHeld() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous_);
  }
  ~SignalsHeld() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  SignalsHeld(const SignalsHeld&) = delete;
  SignalsHeld& operator=(const SignalsHeld&) = delete;

 private:
  sigset_t previous_;
};
}  // namespace

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
  if (!pinDir.empty()) RemoveStalePins(pinDir);
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
        (err = -bpf_map__set_pin_path(skel->maps.trickle_stats, (pinDir + kStatsPin).c_str())) != 0 ||
        (err = -bpf_map__set_pin_path(skel->maps.trickle_closed, (pinDir + kClosedPin).c_str())) != 0) {
      failedCall = "bpf_map__set_pin_path";
      goto cleanup;
    }
  }
  {
    SignalsHeld held;
    err = -cwnd_clamp_bpf__load(skel);
  }
  if (err != 0) {
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
    err = pinDir.empty() ? 0 : -bpf_link__pin(link, linkPath.c_str());
    if (err == EEXIST) {
      err = 0;
      // Another origin on this host attached and pinned first (several started at once on fresh
      // pins): its link is the one that stays; ours goes, and the program is swapped in below.
      bpf_link__destroy(link);
      link = nullptr;
    } else if (err != 0) {
      failedCall = "bpf_link__pin";
      detail = linkPath;
      goto cleanup;
    } else {
      attached = true;
    }
  }
  if (!attached && !pinDir.empty()) {
    // Same maps, another program (an upgrade that changed only the program's logic): the pinned
    // link would keep running the old one. Swap it in place, atomically; the entries stay.
    int linkFd = bpf_obj_get(linkPath.c_str());
    if (linkFd < 0) {
      err = errno;
      failedCall = "bpf_obj_get";
      detail = linkPath;
      goto cleanup;
    }
    const int progFd = bpf_program__fd(skel->progs.trickle_sockops);
    if (ProgramTagOfLink(linkFd) != ProgramTag(progFd) && bpf_link_update(linkFd, progFd, nullptr) != 0) {
      err = errno;
      close(linkFd);
      failedCall = "bpf_link_update";
      detail = linkPath + " (replacing the attached program with this build's)";
      goto cleanup;
    }
    close(linkFd);
  }
  targets_fd_ = dup(bpf_map__fd(skel->maps.trickle_targets));
  stats_fd_ = dup(bpf_map__fd(skel->maps.trickle_stats));
  closed_fd_ = dup(bpf_map__fd(skel->maps.trickle_closed));
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
  if (!PinnedMapsMatch(pinDir)) {
    Napi::Error error =
        Napi::Error::New(env, "the clamp maps pinned in " + pinDir +
                                  " are from another build of the program: run \"trickle native setup\" as root again");
    error.Set("code", Napi::String::New(env, "NATIVE_ERR_BPF_STALE"));
    throw error;
  }
  for (const auto& [fd, name] :
       {std::pair{&targets_fd_, kTargetsPin}, std::pair{&stats_fd_, kStatsPin}, std::pair{&closed_fd_, kClosedPin}}) {
    const std::string path = pinDir + name;
    *fd = bpf_obj_get(path.c_str());
    if (*fd < 0) {
      int err = errno;
      Close();
      throw SyscallError(env, "bpf_obj_get", err, path);
    }
  }
}

void BpfClamp::Unpin(Napi::Env env, const std::string& pinDir) {
  Close();
  for (const char* name : {kLinkPin, kTargetsPin, kStatsPin, kClosedPin}) {
    const std::string path = pinDir + name;
    if (unlink(path.c_str()) != 0 && errno != ENOENT) throw SyscallError(env, "unlink", errno, path);
  }
}

void BpfClamp::SetTarget(Napi::Env env, uint64_t cookie, uint32_t mode, uint64_t rateBytesPerSec, uint32_t gainMilli,
                         uint32_t minPackets, uint32_t fixedPackets, uint32_t clampRtt) {
  RequireOpen(env);
  RequireClampRtt(env, clampRtt);
  trickle_clamp_target target = CarriedOver(targets_fd_, cookie);
  target.mode = mode;
  target.rate_bytes_per_sec = rateBytesPerSec;
  target.gain_milli = gainMilli;
  target.min_packets = minPackets;
  target.fixed_packets = fixedPackets;
  target.clamp_rtt = clampRtt;
  if (bpf_map_update_elem(targets_fd_, &cookie, &target, BPF_ANY) != 0)
    throw SyscallError(env, "bpf_map_update_elem", errno, "trickle_targets");
}

void BpfClamp::SetSchedule(Napi::Env env, uint64_t cookie, uint32_t mode, uint64_t baseAcked, uint32_t throttleOffset,
                           uint32_t graceUs, uint32_t gainMilli, uint32_t minPackets, uint32_t clampRtt,
                           const uint32_t* pieces, size_t pieceCount) {
  static_assert(kSchedulePieces == TRICKLE_SCHEDULE_PIECES, "the addon and the program agree on the schedule's length");
  RequireOpen(env);
  if (mode != TRICKLE_MODE_SCHEDULE && mode != TRICKLE_MODE_PACE_SCHEDULE)
    throw ArgumentError(env, "a schedule's mode is TRICKLE_MODE_SCHEDULE or TRICKLE_MODE_PACE_SCHEDULE (got " +
                                 std::to_string(mode) + ")");
  RequireClampRtt(env, clampRtt);
  trickle_clamp_target target = CarriedOver(targets_fd_, cookie);
  target.mode = mode;
  target.gain_milli = gainMilli;
  target.min_packets = minPackets;
  target.clamp_rtt = clampRtt;
  target.base_acked = baseAcked;
  target.throttle_offset = throttleOffset;
  target.grace_us = graceUs;
  target.piece_count = static_cast<uint32_t>(pieceCount);
  for (size_t i = 0; i < pieceCount; i++) {
    target.pieces[i].end_offset = pieces[3 * i];
    target.pieces[i].rate_bytes_per_sec = pieces[3 * i + 1];
    target.pieces[i].due_us_at_end = pieces[3 * i + 2];
  }
  if (bpf_map_update_elem(targets_fd_, &cookie, &target, BPF_ANY) != 0)
    throw SyscallError(env, "bpf_map_update_elem", errno, "trickle_targets");
}

void BpfClamp::SetInitialWindow(Napi::Env env, uint64_t cookie, uint32_t packets) {
  RequireOpen(env);
  trickle_clamp_target target{};
  if (bpf_map_lookup_elem(targets_fd_, &cookie, &target) != 0 && errno != ENOENT)
    throw SyscallError(env, "bpf_map_lookup_elem", errno, "trickle_targets");
  target.initial_window_packets = packets;
  target.initial_window_result = 0;
  if (bpf_map_update_elem(targets_fd_, &cookie, &target, BPF_ANY) != 0)
    throw SyscallError(env, "bpf_map_update_elem", errno, "trickle_targets");
}

namespace {
// What the program did to a scheduled response, as the binding's RawScheduleState.
Napi::Object ScheduleRunObject(Napi::Env env, const trickle_schedule_run& run) {
  Napi::Object schedule = Napi::Object::New(env);
  auto number = [&](const char* name, double value) { schedule.Set(name, Napi::Number::New(env, value)); };
  number("state", run.state);
  number("catchUps", run.catch_ups);
  number("phaseStartNs", static_cast<double>(run.phase_start_ns));
  number("phaseStartAcked", static_cast<double>(run.phase_start_acked));
  number("phaseStartRetrans", run.phase_start_retrans);
  number("phaseStartSegsOut", run.phase_start_segs_out);
  number("phaseStartSrttUs", run.phase_start_srtt_us);
  number("floorNs", static_cast<double>(run.floor_ns));
  number("catchingUpNs", static_cast<double>(run.catching_up_ns));
  number("clampSum", static_cast<double>(run.clamp_sum));
  number("clampSamples", run.clamp_samples);
  number("clampMin", run.clamp_min);
  number("clampMax", run.clamp_max);
  number("maxLagUs", run.max_lag_us);
  number("heldNs", static_cast<double>(run.held_ns));
  number("cwndSum", static_cast<double>(run.cwnd_sum));
  number("cwndMin", run.cwnd_min);
  number("cwndMax", run.cwnd_max);
  return schedule;
}
}  // namespace

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
  result.Set("appliedRttUs", Napi::Number::New(env, target.applied_rtt_us));
  result.Set("appliedMss", Napi::Number::New(env, target.applied_mss));
  result.Set("clampRtt", Napi::Number::New(env, target.clamp_rtt));
  result.Set("updates", Napi::Number::New(env, target.updates));
  result.Set("ccSsthresh", Napi::Number::New(env, target.cc_ssthresh));
  result.Set("initialWindowPackets", Napi::Number::New(env, target.initial_window_packets));
  result.Set("initialWindowResult", Napi::Number::New(env, target.initial_window_result));
  result.Set("pacingBytesPerSec", Napi::Number::New(env, static_cast<double>(target.pacing_bytes_per_sec)));
  if (target.mode != TRICKLE_MODE_SCHEDULE && target.mode != TRICKLE_MODE_PACE_SCHEDULE) return result;
  result.Set("schedule", ScheduleRunObject(env, target.run));
  return result;
}

Napi::Value BpfClamp::TakeClosed(Napi::Env env, uint64_t cookie) {
  RequireOpen(env);
  trickle_closed_phase closed{};
  if (bpf_map_lookup_and_delete_elem(closed_fd_, &cookie, &closed) != 0) {
    if (errno == ENOENT) return env.Undefined();
    throw SyscallError(env, "bpf_map_lookup_and_delete_elem", errno, "trickle_closed");
  }
  Napi::Object result = Napi::Object::New(env);
  result.Set("schedule", ScheduleRunObject(env, closed.run));
  result.Set("closedNs", Napi::Number::New(env, static_cast<double>(closed.closed_ns)));
  result.Set("bytesAcked", Napi::Number::New(env, static_cast<double>(closed.bytes_acked)));
  result.Set("totalRetrans", Napi::Number::New(env, closed.total_retrans));
  result.Set("dataSegsOut", Napi::Number::New(env, closed.data_segs_out));
  result.Set("srttUs", Napi::Number::New(env, closed.srtt_us));
  return result;
}

bool BpfClamp::DeleteTarget(Napi::Env env, uint64_t cookie) {
  RequireOpen(env);
  if (bpf_map_delete_elem(targets_fd_, &cookie) == 0) return true;
  if (errno == ENOENT) return false;
  throw SyscallError(env, "bpf_map_delete_elem", errno, "trickle_targets");
}

uint32_t BpfClamp::CountEntries(Napi::Env env, int fd, const char* mapName) {
  RequireOpen(env);
  uint32_t count = 0;
  uint64_t key = 0;
  uint64_t next = 0;
  const void* previous = nullptr;
  while (bpf_map_get_next_key(fd, previous, &next) == 0) {
    count++;
    key = next;
    previous = &key;
  }
  if (errno != ENOENT) throw SyscallError(env, "bpf_map_get_next_key", errno, mapName);
  return count;
}

Napi::Object BpfClamp::Stats(Napi::Env env) {
  RequireOpen(env);
  const int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) throw SyscallError(env, "libbpf_num_possible_cpus", -cpus);
  const char* names[TRICKLE_STAT_COUNT] = {"rttSamples",       "clampUpdates", "closedRemoved",
                                           "setsockoptErrors", "catchUps",     "pacingUpdates"};
  Napi::Object stats = Napi::Object::New(env);
  std::vector<uint64_t> perCpu(static_cast<size_t>(cpus));
  for (uint32_t key = 0; key < TRICKLE_STAT_COUNT; key++) {
    if (bpf_map_lookup_elem(stats_fd_, &key, perCpu.data()) != 0)
      throw SyscallError(env, "bpf_map_lookup_elem", errno, "trickle_stats");
    double total = 0;
    for (uint64_t value : perCpu) total += static_cast<double>(value);
    stats.Set(names[key], Napi::Number::New(env, total));
  }
  stats.Set("entries", Napi::Number::New(env, CountEntries(env, targets_fd_, "trickle_targets")));
  stats.Set("closedPhasesKept", Napi::Number::New(env, CountEntries(env, closed_fd_, "trickle_closed")));
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
void BpfClamp::SetTarget(Napi::Env env, uint64_t, uint32_t, uint64_t, uint32_t, uint32_t, uint32_t) {
  NotCompiled(env);
}
void BpfClamp::SetSchedule(Napi::Env env, uint64_t, uint32_t, uint64_t, uint32_t, uint32_t, uint32_t, uint32_t,
                           const uint32_t*, size_t) {
  NotCompiled(env);
}
void BpfClamp::SetInitialWindow(Napi::Env env, uint64_t, uint32_t) { NotCompiled(env); }
Napi::Value BpfClamp::GetTarget(Napi::Env env, uint64_t) { NotCompiled(env); }
Napi::Value BpfClamp::TakeClosed(Napi::Env env, uint64_t) { NotCompiled(env); }
bool BpfClamp::DeleteTarget(Napi::Env env, uint64_t) { NotCompiled(env); }
uint32_t BpfClamp::CountEntries(Napi::Env env, int, const char*) { NotCompiled(env); }
Napi::Object BpfClamp::Stats(Napi::Env env) { NotCompiled(env); }

#endif

}  // namespace trickle
