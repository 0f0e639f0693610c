// set_user_preferences: the JSON Schema function definition a model sees, and its execution.
import type { ToolDefinition } from '../../runtime/plugin.ts';
import { bundledContract, contractSchema } from '../../../platform/contract.ts';
import { PREFERENCE_FIELDS, type PreferenceField } from './record.ts';
import type { UserPreferencesService } from './service.ts';

export const SET_USER_PREFERENCES = 'set_user_preferences';

/** What each field means, worded for a model deciding what to pass. */
const FIELD_DESCRIPTIONS: Record<PreferenceField, string> = {
  agentName: 'The name the user wants to call you (the agent).',
  userName: 'How to address the user: the name or form of address they asked for.',
  language: 'Language to answer in: a BCP 47 tag or a language name, e.g. "sw", "Egyptian Arabic".',
  tone: 'Tone of voice, e.g. "warm", "dry and concise".',
  length: 'How long answers should be.',
  format: 'Preferred form of answers.',
  formality: 'Register to use.',
  emoji: 'How much to use emoji.',
  customInstructions: 'Other standing instructions about how to behave, written for your future self.',
};

/** The contract's UserPreferences fields (types, lengths, choices, null to clear), each with the model's description. */
const contractFields = contractSchema(bundledContract(), 'UserPreferences').properties ?? {};

export const setUserPreferencesParameters = {
  type: 'object' as const,
  additionalProperties: false,
  properties: Object.fromEntries(PREFERENCE_FIELDS.map((f) => [f, { ...contractFields[f], description: FIELD_DESCRIPTIONS[f] }])),
};

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
