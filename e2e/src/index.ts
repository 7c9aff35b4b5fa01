/** Public entry of @trickle/e2e. */
export { launchChromium, chromiumArgs, defaultChromiumPath, type LaunchedChromium, type LaunchOptions } from './chromium.js';
export { E2eError, e2eErrorCodes, type E2eErrorCode } from './errors.js';
export * from './lab/index.js';
