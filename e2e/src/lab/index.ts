/** The lab's public API (re-exported by the package entry). */
export {
  labUp,
  labDown,
  openLab,
  readLabState,
  requireLabPrivileges,
  labAddresses,
  namespaceNames,
  Lab,
  type LabHost,
  type LabPlace,
  type ViewerHost,
  type LabOptions,
  type LabState,
  type LabStatus,
  type QdiscStats,
} from './lab.js';
export {
  symmetricLink,
  parseRate,
  parseDurationMs,
  parseLoss,
  parseBytes,
  bdpBytes,
  type LinkSpec,
  type DirectionSpec,
  type SymmetricLinkOptions,
} from './link-spec.js';
export { profiles, profileLink, type Profile } from './profiles.js';
export { linkBackends } from './backends.js';
export { netemAvailable, netemAvailableHere } from './netem-backend.js';
export { startRouter, type RouterOptions, type RunningRouter } from './router.js';
export type { LinkBackend, LinkBackendName } from './link-backend.js';
export { tbfBurstBytes } from './link-backend.js';
export { startCapture, startProbe, type Capture, type Probe, type ProbeSample } from './measure.js';
export { parsePcap, tcpFlags, type TcpPacket } from './analysis/pcap.js';
export {
  analyzeFlows,
  detectBursts,
  burstShareAtMost,
  packetShareInBurstsOver,
  queueingDelaysMs,
  paperBurstDefinition,
  type FlowAnalysis,
  type DataPacket,
  type BurstOptions,
} from './analysis/flows.js';
export {
  measureIdleRtt,
  type IdleRtt,
  measureBulkGoodputBps,
  measureBurstDelivery,
  measureRandomLoss,
  binomialInterval,
  tcpPayloadEfficiency,
} from './accuracy.js';
export { startPeer, bulkFlow, type Peer } from './traffic.js';
export {
  drawLinks,
  parseLinksCsv,
  linkPopulation,
  linkDistributions,
  viewerAddress,
  describePopulation,
  maxViewers,
  type LinkDraw,
  type AccessLink,
  type LinkPopulation,
  type PopulationOptions,
} from './population.js';
export { populationUp, populationStatus, type PopulationLabOptions, type ViewerLinkStatus } from './population-lab.js';
export { machineCpuSeconds, processCpuSeconds, type MachineCpuSeconds } from './cpu-time.js';
export {
  measurePopulationAccuracy,
  type LinkAccuracy,
  type PopulationAccuracy,
  type PopulationAccuracyOptions,
} from './population-accuracy.js';
