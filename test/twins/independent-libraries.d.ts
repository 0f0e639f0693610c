// The independent verifier's libraries ship no type declarations; the tests use them through
// test/twins/independent-verifier.ts only.
declare module '@digitalbazaar/credentials-context';
declare module '@digitalbazaar/data-integrity-context';
declare module '@digitalbazaar/data-integrity';
declare module '@digitalbazaar/did-method-key';
declare module '@digitalbazaar/ed25519-multikey';
declare module '@digitalbazaar/eddsa-jcs-2022-cryptosuite';
declare module '@digitalbazaar/multikey-context';
declare module '@digitalbazaar/bitstring';
declare module '@digitalbazaar/vc';
declare module '@digitalbazaar/vc-bitstring-status-list';
declare module 'did-context';
declare module 'jsonld-signatures';
declare module 'jsonld';
