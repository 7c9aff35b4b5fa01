/** Public entry of @trickle/e2e. */
export {
  launchChromium,
  chromiumArgs,
  defaultChromiumPath,
  type LaunchedChromium,
  type LaunchOptions,
} from './chromium.js';
export { E2eError, e2eErrorCodes, type E2eErrorCode } from './errors.js';
export {
  examples,
  numberExpectation,
  numberFromText,
  stageProgress,
  type NumberKind,
  type StageProgress,
} from './command-help.js';
export * from './lab/index.js';
export { runE2e, defaultConcurrency, startLabOrigin, type E2eRunOptions } from './qoe/run.js';
export { playSession, type SessionOptions } from './qoe/session.js';
export { assetPath } from './qoe/asset-path.js';
export { playerPageUrl, routePlayerPage, playerPageOrigin, type PageQuery } from './qoe/player-page.js';
export {
  sessionRecord,
  asSessionResult,
  aggregateSessions,
  type SessionRecord,
  type PlayerSnapshot,
  type PlayerEvent,
  type PlayerKind,
  type BrowserAggregates,
  type E2eRunResult,
  sessionAccount,
  type SessionAccount,
} from './qoe/session-record.js';
export {
  renderReportPage,
  escapeHtml,
  type ReportPage,
  type ReportSection,
  type ReportTable,
} from './report/vega-page.js';
export {
  runExperiment,
  writeResults,
  planRuns,
  type ExperimentOptions,
  type ExperimentProgress,
  type PlannedRun,
} from './experiment/run.js';
export {
  loadExperimentConfig,
  parseExperimentConfig,
  type ExperimentConfig,
  type ExperimentGroup,
} from './experiment/config.js';
export type {
  GroupRow,
  KindSummary,
  ProfileSummary,
  CompassCheck,
  ExperimentResults,
} from './experiment/analysis.js';
export type { Estimate } from './experiment/statistics.js';
export { bootstrapComparison, formatEstimate, mean, meanInterval, wilsonInterval } from './experiment/statistics.js';
export { runMatrix, readMatrixRuns, type MatrixProgress, type MatrixRunnerOptions } from './qoe-matrix/run.js';
export {
  cellsOf,
  runsOf,
  parseMatrixPolicy,
  matrixLinks,
  matrixPlayers,
  readsCmcd,
  type MatrixOptions,
  type MatrixCell,
  type MatrixPlayer,
  type MatrixPolicy,
} from './qoe-matrix/config.js';
export {
  summarizeCell,
  goalChecks,
  agreements,
  bitrateRatio,
  minimumSessions,
  runConditions,
  type CellSummary,
  type MatrixData,
  type MatrixRunData,
  type RunConditions,
  type GoalCheck,
  type Verdict,
} from './qoe-matrix/analysis.js';
export { matrixReport, writeMatrixHtml, writeMatrixSvgs } from './qoe-matrix/report.js';
export { renderVegaLiteSvg } from './report/vega-svg.js';
export { machineStalls, playToEnd, starvedStalls, type PlayedSession } from './qoe/play-to-end.js';
