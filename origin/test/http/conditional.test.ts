import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { evaluatePreconditions, httpDate, ifRangeAllowsPartial, makeValidators } from '../../src/http/conditional.js';

const validators = makeValidators(4096, Date.UTC(2026, 0, 2, 3, 4, 5, 678));
const lastModified = httpDate(validators.lastModifiedSec);
const earlier = httpDate(validators.lastModifiedSec - 60);
const later = httpDate(validators.lastModifiedSec + 60);

describe('validators', () => {
  it('makes a strong etag from size and mtime and a second-precision date', () => {
    assert.match(validators.etag, /^"[0-9a-f]+-[0-9a-f]+"$/);
    assert.equal(lastModified, 'Fri, 02 Jan 2026 03:04:05 GMT');
    assert.notEqual(makeValidators(4097, Date.UTC(2026, 0, 2)).etag, makeValidators(4096, Date.UTC(2026, 0, 2)).etag);
  });
});

describe('evaluatePreconditions', () => {
  const check = (headers: Parameters<typeof evaluatePreconditions>[1], method = 'GET') =>
    evaluatePreconditions(method, headers, validators);

  it('proceeds without conditional headers', () => {
    assert.equal(check({}), 'proceed');
  });

  it('If-None-Match: 304 on a match (weak comparison), including in a list and *', () => {
    assert.equal(check({ ifNoneMatch: validators.etag }), 'not-modified');
    assert.equal(check({ ifNoneMatch: `W/${validators.etag}` }), 'not-modified');
    assert.equal(check({ ifNoneMatch: `"other", ${validators.etag}` }), 'not-modified');
    assert.equal(check({ ifNoneMatch: '*' }), 'not-modified');
    assert.equal(check({ ifNoneMatch: '"other"' }), 'proceed');
    assert.equal(check({ ifNoneMatch: validators.etag }, 'POST'), 'precondition-failed');
  });

  it('If-Modified-Since: 304 when not modified since, ignored when If-None-Match is present', () => {
    assert.equal(check({ ifModifiedSince: lastModified }), 'not-modified');
    assert.equal(check({ ifModifiedSince: later }), 'not-modified');
    assert.equal(check({ ifModifiedSince: earlier }), 'proceed');
    assert.equal(check({ ifModifiedSince: 'not a date' }), 'proceed');
    assert.equal(check({ ifNoneMatch: '"other"', ifModifiedSince: later }), 'proceed');
  });

  it('If-Match and If-Unmodified-Since: 412 when they fail', () => {
    assert.equal(check({ ifMatch: validators.etag }), 'proceed');
    assert.equal(check({ ifMatch: '*' }), 'proceed');
    assert.equal(check({ ifMatch: `W/${validators.etag}` }), 'precondition-failed');
    assert.equal(check({ ifMatch: '"other"' }), 'precondition-failed');
    assert.equal(check({ ifUnmodifiedSince: earlier }), 'precondition-failed');
    assert.equal(check({ ifUnmodifiedSince: lastModified }), 'proceed');
  });
});

describe('ifRangeAllowsPartial', () => {
  it('honours the range only for a strong etag match or the exact date', () => {
    assert.equal(ifRangeAllowsPartial(undefined, validators), true);
    assert.equal(ifRangeAllowsPartial(validators.etag, validators), true);
    assert.equal(ifRangeAllowsPartial(`W/${validators.etag}`, validators), false);
    assert.equal(ifRangeAllowsPartial('"stale"', validators), false);
    assert.equal(ifRangeAllowsPartial(lastModified, validators), true);
    assert.equal(ifRangeAllowsPartial(earlier, validators), false);
    assert.equal(ifRangeAllowsPartial('garbage', validators), false);
  });
});
