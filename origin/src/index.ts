/** Public entry of @trickle/origin. Other packages import only from here. */
export { buildApp, type BuildAppOptions } from './app.js';
export { trickleOrigin, playerFiles, type TrickleOriginOptions, type OriginHandles } from './plugin.js';
export { playerPageFiles, type PlayerFiles } from './player/routes.js';
export { startOrigin, checkDemoMedia, type RunningOrigin } from './server.js';
export { loadTlsMaterial, makeDevCertificates, type TlsFiles, type TlsMaterial, type DevCertificates } from './tls.js';
export {
  loadConfig,
  resolveConfig,
  configFromEnv,
  originConfigSchema,
  type OriginConfig,
  type OriginConfigInput,
  type ConfigSources,
} from './config/config.js';
export * from './flow-records.js';
export { buildPolicies, deliveryNeedsClamp, type Policy } from './delivery/delivery-engine.js';
export * from './rules.js';
export { OriginError, isOriginError, originErrorCodes, errorBody, statusOf, type OriginErrorCode } from './errors.js';
export {
  MediaLibrary,
  type MediaLibraryOptions,
  type MediaFile,
  type AssetEntry,
  type IndexState,
} from './media/library.js';
export {
  assetFilesOf,
  buildAssetIndex,
  summarizeIndex,
  type AssetFiles,
  type AssetIndex,
  type RenditionIndex,
  type SegmentEntry,
  type ProgressiveIndex,
  type SegmentedFile,
} from './media/media-index.js';
export {
  buildCorpus,
  corpusShapes,
  describeShapeOutcome,
  findShakaPackager,
  type CorpusShape,
  type ShapeOutcome,
} from './media/corpus.js';
export { describeAsset, describeRenditions, inspectAsset } from './media/inspect.js';
export { ByteTimeMap, readProgressiveLayout, type ProgressiveLayout, type SampleTrack } from './media/sample-table.js';
export { vbrBlocksOf, type VbrBlocks } from './delivery/rate-plan.js';
export { parseRange, byteRangeLength, type ByteRange, type RangeOutcome } from './http/range.js';
export { generateDemoMedia, type DemoOptions } from './media/demo.js';
export { packageInput, type PackageInputOptions, type Stage, type ProgressReporter } from './media/packager.js';
export { parseLadder, fitLadder, defaultLadderSpec, type Rung } from './media/ladder.js';
export { checkTools, ffprobe } from './media/ffmpeg.js';
