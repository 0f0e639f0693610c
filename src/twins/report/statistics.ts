// The sample statistics the campaign report and its emission reductions share.

export const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** The unbiased sample variance (n − 1). */
export const sampleVariance = (xs: number[]) => {
  const m = mean(xs);
  return xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length - 1);
};

/** The sample standard deviation (n − 1). */
export const sampleSd = (xs: number[]) => Math.sqrt(sampleVariance(xs));

/** A figure as reported: rounded to `digits` decimals. */
export const round = (x: number, digits = 6) => Number(x.toFixed(digits));
