// The user-preferences plugin: per-room behavioural preferences of a user (spec D).
import type { AgentPlugin } from '../../runtime/plugin.ts';
import { renderUserPreferences, PROMPT_SECTION_TITLE } from './prompt.ts';
import type { UserPreferences } from './record.ts';
import { USER_PREFERENCES_PATH, userPreferencesHandlers } from './routes.ts';
import { UserPreferencesService } from './service.ts';
import { SET_USER_PREFERENCES, setUserPreferencesTool } from './tool.ts';

export const userPreferencesPlugin: AgentPlugin = {
  manifest: {
    name: 'user-preferences',
    version: '1.0.0',
    title: 'User preferences',
    summary:
      'Remembers, per user and room, how the agent should behave: language, tone, answer length and format, formality, emoji use, what to call the user and the agent, and standing instructions.',
    whenToUse: [
      'The user states how you should behave from now on: shorter or longer answers, a language, a tone, formality or emoji use.',
      'The user tells you what to call them, or gives you a name.',
      'The user asks you to stop or start doing something in every answer.',
    ],
    whenNotToUse: [
      'A request about one answer only ("just this once, use bullets", "explain this one in detail").',
      'Facts about the user, their household or their stove: those belong to a memory plugin.',
      'Documents, summaries or other artifacts you produced: those belong to a memory plugin.',
    ],
    examples: [
      { user: 'From now on please answer in Swahili and keep it short.', tool: SET_USER_PREFERENCES, args: { language: 'sw', length: 'brief' } },
      { user: 'Call me Mama Amina, and I will call you Jiko.', tool: SET_USER_PREFERENCES, args: { userName: 'Mama Amina', agentName: 'Jiko' } },
      { user: 'Stop using emoji.', tool: SET_USER_PREFERENCES, args: { emoji: 'none' } },
      { user: 'Forget the name you call me, just say hello.', tool: SET_USER_PREFERENCES, args: { userName: null } },
    ],
    visibility: 'always',
    stability: 'stable',
    category: 'core',
    defaultState: 'on',
    dependsOn: [],
    requiredEnv: [],
  },
  routePaths: [USER_PREFERENCES_PATH],
  create({ db }) {
    const service = new UserPreferencesService(db);
    return {
      tools: [setUserPreferencesTool(service)],
      handlers: userPreferencesHandlers(service),
      state: {
        key: 'userPreferences',
        load: ({ userDid, roomId }) => service.get(userDid, roomId),
        fallback: null,
      },
      promptSection(state) {
        const content = renderUserPreferences(state.userPreferences as UserPreferences | null | undefined);
        return content ? { title: PROMPT_SECTION_TITLE, content } : undefined;
      },
    };
  },
};
