// set_user_preferences: the JSON Schema function definition a model sees, and its execution.
import type { ToolDefinition } from '../../runtime/plugin.ts';
import { EMOJI_USES, FORMALITIES, FORMATS, LENGTHS } from './record.ts';
import type { UserPreferencesService } from './service.ts';

export const SET_USER_PREFERENCES = 'set_user_preferences';

const text = (maxLength: number, description: string) => ({ type: ['string', 'null'], maxLength, description });
const choice = (values: readonly string[], description: string) => ({ type: ['string', 'null'], enum: [...values, null], description });

export const setUserPreferencesParameters = {
  type: 'object',
  additionalProperties: false,
  properties: {
    agentName: text(80, 'The name the user wants to call you (the agent).'),
    userName: text(80, 'How to address the user: the name or form of address they asked for.'),
    language: text(35, 'Language to answer in: a BCP 47 tag or a language name, e.g. "sw", "Egyptian Arabic".'),
    tone: text(120, 'Tone of voice, e.g. "warm", "dry and concise".'),
    length: choice(LENGTHS, 'How long answers should be.'),
    format: choice(FORMATS, 'Preferred form of answers.'),
    formality: choice(FORMALITIES, 'Register to use.'),
    emoji: choice(EMOJI_USES, 'How much to use emoji.'),
    customInstructions: text(2000, 'Other standing instructions about how to behave, written for your future self.'),
  },
} as const;

export const SET_USER_PREFERENCES_DESCRIPTION = [
  'Save how the user wants you to behave from now on in this room: terseness (length), language,',
  'what to call them or you, tone, emoji use, formality, answer format, or other standing instructions.',
  'Call it only when the user states a lasting preference ("always answer in Swahili", "call me Mama Amina",',
  '"stop using emoji", "keep it short from now on").',
  'Do NOT call it for a one-answer request ("just this once, use bullets", "summarise this briefly"),',
  'nor for facts about the user (where they live, their stove, their household) or for documents and other',
  'artifacts you produced: those belong to a memory plugin, not to preferences.',
  'Pass only the fields that change; omitted fields are kept; null clears a field.',
  'Returns the merged preferences.',
].join(' ');

export function setUserPreferencesTool(service: UserPreferencesService): ToolDefinition {
  return {
    name: SET_USER_PREFERENCES,
    description: SET_USER_PREFERENCES_DESCRIPTION,
    parameters: setUserPreferencesParameters,
    run: (args, ctx) => service.set(ctx.userDid, ctx.roomId, args),
  };
}
