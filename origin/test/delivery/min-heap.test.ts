/** The min-heap under a caller's order: items come out least first, ties as the order breaks them. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { MinHeap } from '../../src/delivery/min-heap.js';

describe('MinHeap', () => {
  it('gives back any numbers pushed in ascending order, peeking at the least without taking it', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -1000, max: 1000 }), { maxLength: 200 }), (values) => {
        const heap = new MinHeap<number>((a, b) => a < b);
        for (const value of values) heap.push(value);
        assert.equal(heap.size, values.length);
        const out: number[] = [];
        while (heap.size > 0) {
          const least = heap.peek();
          assert.equal(heap.pop(), least);
          out.push(least!);
        }
        assert.deepEqual(
          out,
          [...values].sort((a, b) => a - b),
        );
      }),
      { seed: 20261129 },
    );
  });

  it('is empty after its last item, and pushes and pops may interleave', () => {
    const heap = new MinHeap<{ costSec: number; edge: number }>(
      (a, b) => a.costSec < b.costSec || (a.costSec === b.costSec && a.edge < b.edge),
    );
    assert.equal(heap.pop(), undefined);
    heap.push({ costSec: 2, edge: 5 });
    heap.push({ costSec: 1, edge: 9 });
    heap.push({ costSec: 1, edge: 3 });
    assert.deepEqual(heap.pop(), { costSec: 1, edge: 3 });
    heap.push({ costSec: 0.5, edge: 1 });
    assert.deepEqual(
      [heap.pop(), heap.pop(), heap.pop()].map((item) => item?.edge),
      [1, 9, 5],
    );
    assert.equal(heap.size, 0);
    assert.equal(heap.peek(), undefined);
  });
});
