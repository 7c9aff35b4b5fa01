/**
 * The origin the harness starts on the lab's origin side (`ip netns exec <ns> node origin-main.js
 * <config-json>`): the same `startOrigin` as `trickle serve`, with config layers as flags.
 */
import { loadConfig, startOrigin } from '@trickle/origin';

const config = await loadConfig({
  env: process.env,
  flags: JSON.parse(process.argv[2] ?? '{}') as Record<string, unknown>,
});
await startOrigin(config, { handleSignals: true });
