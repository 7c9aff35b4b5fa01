import { runE2e } from '@trickle/e2e';
const t0 = Date.now();
const r = await runE2e({ asset: 'demo', media: process.env.TRICKLE_TEST_MEDIA, player: process.argv[2] ?? 'dashjs', sessions: 2, out: '/tmp/e2e-out', onSession: (s, d, n) => console.log(`session ${d}/${n}: ${s.endReason} startup ${s.startupMs} rebuffers ${s.rebuffers.length} errors ${s.errors}`), onRetry: (i, e) => console.log('retry', i, e.message) });
console.log(JSON.stringify(r.aggregates), (Date.now()-t0)/1000, 's');
