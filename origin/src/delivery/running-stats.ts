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
  summary(round: (value: number) => number = Math.round): { min: number; mean: number; max: number } | null {
    if (this.count === 0) return null;
    return { min: round(this.minValue), mean: round(this.sum / this.count), max: round(this.maxValue) };
  }
}
