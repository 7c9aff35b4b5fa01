/**
 * What TLS adds to a response's bytes on the wire, so schedules written in body offsets land on
 * the TCP stream's bytes. A record carries at most 16 kB of plaintext.
 */
const tlsRecordPlaintextBytes = 16_384;

/** Bytes each record adds, by protocol and cipher (Node's defaults are AEAD ciphers). */
export function tlsRecordOverheadBytes(protocol: string | null, cipherName: string | undefined): number {
  // TLS 1.3: 5-byte header, 1 byte of inner content type, 16-byte AEAD tag.
  if (protocol === 'TLSv1.3') return 22;
  // TLS 1.2 ChaCha20-Poly1305: header and tag; AES-GCM adds an 8-byte explicit nonce.
  if (cipherName?.includes('CHACHA20') === true) return 21;
  return 29;
}

/** Where the body byte at `offset` sits in the TLS stream when every record but the last is full. */
export function tlsWireOffset(offset: number, overheadBytes: number): number {
  return offset + Math.ceil(offset / tlsRecordPlaintextBytes) * overheadBytes;
}
