// The "User preferences" system-prompt section: every set field, in a fixed order.
import type { PreferenceField, UserPreferences } from './record.ts';

export const PROMPT_SECTION_TITLE = 'User preferences';

const LINES: [PreferenceField, (value: string) => string][] = [
  ['userName', (v) => `Call the user: ${v}`],
  ['agentName', (v) => `The user calls you: ${v}`],
  ['language', (v) => `Answer in this language: ${v}`],
  ['tone', (v) => `Tone: ${v}`],
  ['length', (v) => `Answer length: ${v}`],
  ['format', (v) => `Answer format: ${v}`],
  ['formality', (v) => `Formality: ${v}`],
  ['emoji', (v) => `Emoji use: ${v}`],
];

/**
 * Short fields are stored as the user or model wrote them; rendering them on one line keeps a
 * value from adding lines of its own to the system prompt.
 */
const oneLine = (v: string) => v.replace(/\s+/g, ' ').trim();

/** The section's body, or undefined when there is nothing to say. */
export function renderUserPreferences(record: UserPreferences | null | undefined): string | undefined {
  if (!record) return undefined;
  const lines: string[] = [];
  for (const [field, render] of LINES) {
    const value = record[field];
    if (value !== null && oneLine(value)) lines.push(`- ${render(oneLine(value))}`);
  }
  const custom = record.customInstructions?.trim();
  if (custom) lines.push(`- Standing instructions:\n${custom.split(/\r?\n/).map((l) => `  ${l}`).join('\n')}`);
  if (!lines.length) return undefined;
  return ['Stored preferences of this user for this room. Follow them unless the user asks otherwise for one answer.', ...lines].join('\n');
}
