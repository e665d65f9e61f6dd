// The service's digests (core/platform/crypto.ts): an API key is found by its SHA-256 and rate
// limits are keyed by one, so a digest must be the standard SHA-256 of the text as UTF-8,
// whatever call computes it: a change here would orphan every stored key hash.
import { describe, expect, it } from 'vitest';
import { safeEqual, secretDigest, sha256, sha256Hex } from '../../core/platform/crypto.js';

describe('the digests', () => {
  it('are the standard SHA-256 of the text as UTF-8 (FIPS 180-2 vectors, and non-ASCII text)', () => {
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex('é')).toBe('4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c');
    expect(sha256Hex('isk_live_Ü€')).toBe('de4a3ae57c6877e21c0fd7331b8c85c525e387389b4e07aff956d611f0f3d3a6');
    const digest = sha256('abc');
    expect(digest).toBeInstanceOf(Buffer);
    expect(digest.toString('hex')).toBe(sha256Hex('abc'));
  });

  it('compare in constant time by digest: equal texts match, any other does not', () => {
    expect(safeEqual('whsec_a', 'whsec_a')).toBe(true);
    expect(safeEqual('whsec_a', 'whsec_b')).toBe(false);
    expect(safeEqual('whsec_a', 'whsec_a ')).toBe(false);
    const platform = secretDigest('adm_secret');
    expect(platform.matches(sha256('adm_secret'))).toBe(true);
    expect(platform.matches(sha256('adm_secreT'))).toBe(false);
  });
});
