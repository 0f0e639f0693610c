// Area B's domain errors: why a hop gets no menu reply. routes.ts maps them to HTTP errors, which
// the app renders as the gateway's END replies; `field` names a field of the gateway's request.

/** A hop whose sessionId belongs to another phone number or service code. */
export class SessionMismatchError extends Error {
  override name = 'SessionMismatchError';
  constructor(readonly field: 'phoneNumber' | 'serviceCode') {
    super('sessionId belongs to another phone number or service code');
  }
}

/** The session stayed busy: other hops kept changing it, or another instance's hop did not finish in time. */
export class SessionBusyError extends Error {
  override name = 'SessionBusyError';
}
