// The parts of jstat (CommonJS, no bundled types) the campaign report uses.
declare module 'jstat' {
  const jStat: {
    studentt: { cdf(x: number, dof: number): number; inv(p: number, dof: number): number };
  };
  export default jStat;
}
