/**
 * Sets key to value as the newest entry of an insertion-ordered map and drops the oldest entries
 * past max: the one eviction rule of the in-process caches (prepared statements, USSD sessions).
 */
export function setBounded<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > max) map.delete(map.keys().next().value!);
}
