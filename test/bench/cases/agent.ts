// Area D: the client-side read of preferences (issue target: >= 40% of the bare Express
// baseline) and the set_user_preferences tool invocation. Both use a room prepared through the API.
import type { BenchCase } from '../case.ts';

const ROOM = '!bench:example.org';

async function setPreferences(baseUrl: string, key: string): Promise<void> {
  const res = await fetch(`${baseUrl}/agent/tools/set_user_preferences/invoke`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ roomId: ROOM, arguments: { userName: 'Mama Amina', language: 'sw', length: 'brief', emoji: 'none' } }),
  });
  if (res.status !== 200) throw new Error(`preparing the agent bench failed: ${res.status} ${await res.text()}`);
}

export const cases: BenchCase[] = [
  {
    name: 'GET /user-preferences',
    targetRatio: 0.4,
    async prepare({ baseUrl, key }) {
      await setPreferences(baseUrl, key);
      return { url: `${baseUrl}/user-preferences?roomId=${encodeURIComponent(ROOM)}`, headers: { Authorization: `Bearer ${key}` } };
    },
  },
  {
    name: 'POST /agent/tools/set_user_preferences/invoke',
    async prepare({ baseUrl, key }) {
      await setPreferences(baseUrl, key);
      return {
        url: `${baseUrl}/agent/tools/set_user_preferences/invoke`,
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ roomId: ROOM, arguments: { tone: 'warm', format: 'bullets' } }),
      };
    },
  },
];
