// XML Schema 1.1 dateTimeStamp (a dateTime with a mandatory time zone): what VC 2.0 requires of
// validFrom / validUntil and Data Integrity of proof.created / proof.expires. The pattern is the
// one VC 2.0 section 4.9 gives; the calendar check (no 31 April) is what a pattern cannot say.
const DATE_TIME_STAMP =
  /^(-?(?:[1-9][0-9]{3,}|0[0-9]{3}))-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T(?:([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9])(\.[0-9]+)?|(24:00:00(?:\.0+)?))(Z|[+-](?:(?:0[0-9]|1[0-3]):[0-5][0-9]|14:00))$/;

/** Milliseconds since the epoch of an XML Schema dateTimeStamp, or undefined when `value` is not one. */
export function dateTimeStampMs(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const m = DATE_TIME_STAMP.exec(value);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac, midnight, zone] = m;
  const year = Number(y);
  const month = Number(mo) - 1;
  const day = Number(d);
  const date = new Date(0);
  date.setUTCFullYear(year, month, day);
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month || date.getUTCDate() !== day) return undefined;
  // 24:00:00 is the first instant of the next day.
  const seconds = midnight ? 86_400 : Number(h) * 3600 + Number(mi) * 60 + Number(s);
  const offsetMinutes = zone === 'Z' ? 0 : (zone!.startsWith('-') ? -1 : 1) * (Number(zone!.slice(1, 3)) * 60 + Number(zone!.slice(4, 6)));
  return date.getTime() + seconds * 1000 + Math.floor(Number(`0${frac ?? ''}`) * 1000) - offsetMinutes * 60_000;
}
