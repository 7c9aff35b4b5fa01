/** Where body offsets land in a TLS stream: each full record adds its header and tag. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { tlsRecordOverheadBytes, tlsWireOffset } from '../../src/delivery/tls-records.js';

describe('TLS record overhead', () => {
  it('is 22 bytes under TLS 1.3, 29 under TLS 1.2 AES-GCM, 21 under TLS 1.2 ChaCha20', () => {
    assert.equal(tlsRecordOverheadBytes('TLSv1.3', 'TLS_AES_256_GCM_SHA384'), 22);
    assert.equal(tlsRecordOverheadBytes('TLSv1.2', 'ECDHE-RSA-AES128-GCM-SHA256'), 29);
    assert.equal(tlsRecordOverheadBytes('TLSv1.2', 'ECDHE-ECDSA-CHACHA20-POLY1305'), 21);
  });

  it('moves an offset by one overhead per record begun before it', () => {
    assert.equal(tlsWireOffset(0, 22), 0);
    assert.equal(tlsWireOffset(1, 22), 23);
    assert.equal(tlsWireOffset(16_384, 22), 16_406);
    assert.equal(tlsWireOffset(16_385, 22), 16_385 + 44);
    // A 2 MB segment: 123 records, 0.13 % more bytes on the wire.
    assert.equal(tlsWireOffset(2_000_000, 22) - 2_000_000, 123 * 22);
  });
});
