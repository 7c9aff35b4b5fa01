/** Public entry of @trickle/native. */
export {
  tcpInfo,
  setMaxPacingRate,
  getMaxPacingRate,
  setCongestionControl,
  getCongestionControl,
  setNotsentLowat,
  raiseSendBuffer,
  openFileSend,
  socketCookie,
  socketFd,
  type FileSend,
  type SendFileDone,
  type TcpInfo,
  type SocketLike,
} from './socket.js';
export { attachClamp, type AttachOptions, type AttachedClamp } from './clamp/attach.js';
export { clampBackends } from './clamp/registry.js';
export { clampMode } from './clamp/bpf.js';
export {
  defaultGain,
  defaultMinPackets,
  schedulePieces,
  type ClampSchedule,
  type SchedulePiece,
  type ScheduleState,
  type ClampBackend,
  type ClampBackendName,
  type ClampRate,
  type ClampRtt,
  type ClampSocketState,
  type ClampStats,
  type ClosedPhase,
  type InitialWindowState,
  type ReleaseOptions,
} from './clamp/clamp-backend.js';
export { findPodCgroup, isPodCgroupName, podsGone } from './pod-cgroup.js';
export {
  joinCgroup,
  createCgroup,
  resolveCgroupPath,
  isInCgroup,
  currentCgroup,
  findCgroup2Mount,
  ensureBpffs,
  defaultPinDir,
  defaultCgroupName,
} from './cgroup.js';
export { setupClamp, teardownClamp, reapPodPins, type SetupOptions, type SetupResult } from './setup.js';
export { nativeInfo, type NativeInfo, type Capability } from './info.js';
export { createSocketControl, type SocketControl } from './socket-control.js';
export { NativeError, nativeErrorCodes, isSyscallError, type NativeErrorCode, type SyscallError } from './errors.js';
export { buildStatus } from './binding.js';
export { delaylinePath, packageRoot as nativePackageRoot } from './paths.js';
