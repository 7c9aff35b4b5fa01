/** Min, mean and max of a set of values (null in records when there were none). */
export interface Summary {
  readonly min: number;
  readonly mean: number;
  readonly max: number;
}

/** Min, max and mean of a stream of numbers, without keeping them. */
export class RunningStats {
  private count = 0;
  private sum = 0;
  private minValue = Infinity;
  private maxValue = -Infinity;

  add(value: number): void {
    this.count++;
    this.sum += value;
    if (value < this.minValue) this.minValue = value;
    if (value > this.maxValue) this.maxValue = value;
  }

  get size(): number {
    return this.count;
  }

  /** null when nothing was added. */
  summary(round: (value: number) => number = Math.round): Summary | null {
    if (this.count === 0) return null;
    return { min: round(this.minValue), mean: round(this.sum / this.count), max: round(this.maxValue) };
  }
}

/**
 * Rates of blocks (bits/s): min and max over blocks, and as the mean the rate of the whole, the
 * bytes over the time they take at their rates (a byte-weighted harmonic mean). For VBR media
 * that is the rate a flow must sustain to keep up with playback; the arithmetic mean of the
 * blocks' rates overstates it whenever the rate varies.
 */
export class RateStats {
  private readonly extremes = new RunningStats();
  private bits = 0;
  private seconds = 0;

  add(rateBps: number, bytes: number): void {
    if (!(rateBps > 0) || bytes <= 0) return;
    this.extremes.add(rateBps);
    this.bits += bytes * 8;
    this.seconds += (bytes * 8) / rateBps;
  }

  get size(): number {
    return this.extremes.size;
  }

  summary(): Summary | null {
    const extremes = this.extremes.summary();
    return extremes === null ? null : { ...extremes, mean: Math.round(this.bits / this.seconds) };
  }
}
