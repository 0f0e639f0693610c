// PIN rules and PIN encryption. PINs are stored AES-256-GCM encrypted with a random 96-bit IV
// per record (never a deterministic IV), checked by decrypting and comparing in constant time.
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { invalidConfig, type Config } from '../config.ts';
import type { Logger } from '../platform/logging.ts';
import { parse32ByteKey } from '../platform/key-bytes.ts';

export const PIN_LENGTH = 5;
const FORMAT = 'v1';

/** Why a new PIN is refused, or undefined when it is acceptable. */
export function pinProblem(pin: string): 'format' | 'trivial' | undefined {
  if (!new RegExp(`^\\d{${PIN_LENGTH}}$`).test(pin)) return 'format';
  const digits = [...pin].map(Number);
  const steps = digits.slice(1).map((d, i) => d - digits[i]!);
  if (steps.every((s) => s === 0) || steps.every((s) => s === 1) || steps.every((s) => s === -1)) return 'trivial';
  return undefined;
}

/**
 * The PIN key from PIN_ENCRYPTION_KEY (production has one: the configuration requires it);
 * development and test generate one into DATA_DIR (kept across restarts) and say so.
 */
export function resolvePinKey(config: Config, logger: Logger, { create = true } = {}): Buffer {
  if (config.PIN_ENCRYPTION_KEY !== undefined) {
    // Its form was checked with the configuration.
    return parse32ByteKey(config.PIN_ENCRYPTION_KEY)!;
  }
  const file = join(config.DATA_DIR, 'pin-encryption.key');
  if (existsSync(file)) {
    const key = parse32ByteKey(readFileSync(file, 'utf8'));
    if (!key) throw invalidConfig(file, 'not a 32-byte hex key; delete it or set PIN_ENCRYPTION_KEY');
    return key;
  }
  // An operator's command seals with the server's key, never a new one of its own.
  if (!create) throw invalidConfig('PIN_ENCRYPTION_KEY', `is not set and ${file} does not exist: run where the server keeps its data (DATA_DIR) or set the server's key`);
  mkdirSync(config.DATA_DIR, { recursive: true });
  const key = randomBytes(32);
  writeFileSync(file, key.toString('hex') + '\n', { mode: 0o600 });
  logger.warn({ file }, 'PIN_ENCRYPTION_KEY is not set: generated a development key into the data folder');
  return key;
}

export class PinCipher {
  private readonly digestKey: Buffer;
  constructor(private readonly key: Buffer) {
    this.digestKey = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'hearth-ussd-text-digest', 32));
  }

  /**
   * Digest of a session's cumulative text (which contains the PINs typed). Keyed (HMAC-SHA256
   * under a subkey of the PIN key): a plain SHA-256 of a text with a 5-digit PIN is undone by
   * trying 100,000 PINs.
   */
  digest(text: string): string {
    return createHmac('sha256', this.digestKey).update(text).digest('hex');
  }

  /** `v1.<iv>.<tag>.<ciphertext>` (base64url), a fresh random IV each time. */
  seal(pin: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const data = Buffer.concat([cipher.update(pin, 'utf8'), cipher.final()]);
    return [FORMAT, iv, cipher.getAuthTag(), data].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
  }

  open(sealed: string): string {
    const [format, iv, tag, data] = sealed.split('.');
    if (format !== FORMAT || !iv || !tag || data === undefined) throw new Error('unknown PIN record format');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  }

  /** Decrypts and compares in constant time (equal lengths are guaranteed by padding both). */
  matches(sealed: string, candidate: string): boolean {
    const a = Buffer.from(this.open(sealed).padEnd(16, '\0'));
    const b = Buffer.from(candidate.padEnd(16, '\0'));
    return a.length === b.length && timingSafeEqual(a, b);
  }
}
