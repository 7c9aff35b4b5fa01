// The example's origin: @trickle/origin serving the demo media on port 8093. In your own
// repository, point QOE_URL at your origin or CDN instead and drop the webServer block.
import { loadConfig, startOrigin } from '@trickle/origin';

const config = await loadConfig({
  env: process.env,
  flags: { media: process.env.TRICKLE_TEST_MEDIA ?? '../../media', host: '127.0.0.1', port: 8093, logLevel: 'warn' },
});
await startOrigin(config, { handleSignals: true });
