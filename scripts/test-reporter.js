// A node:test reporter for scripts/test.js and scripts/flake-hunt: one JSON line per finished test
// (pass, fail or skip) with its file, nesting, duration and failure message, so the runner can
// count, time and list tests without parsing the spec reporter's text.
export default async function* jsonLines(source) {
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { name, nesting, file, details, skip, todo } = event.data;
    const error = details?.error;
    yield `${JSON.stringify({
      status: event.type === 'test:fail' ? 'fail' : skip !== undefined || todo !== undefined ? 'skip' : 'pass',
      name,
      nesting,
      file,
      suite: details?.type === 'suite',
      durationMs: details?.duration_ms ?? 0,
      reason: typeof skip === 'string' ? skip : undefined,
      // The whole story up to 40 lines: a check that runs others (the netem guest) says which failed below its first.
      error:
        error === undefined
          ? undefined
          : String(error.cause?.message ?? error.message ?? error)
              .split('\n')
              .slice(0, 40)
              .join('\n'),
    })}\n`;
  }
}
