/**
 * BOLA-BASIC (Spiteri et al., INFOCOM 2016) with dash.js's parameters: utilities ln(b_i / b_0) + 1,
 * gp = (u_max - 1) / (bufferTarget / 10 s - 1), V = 10 s / gp, where bufferTarget =
 * max(maxBuffer, 10 s + 2 s per rendition); choose argmax_i (V (u_i + gp) - buffer) / b_i.
 */
import type { AbrContext, AbrDecision, AbrRule } from './abr-rule.js';

const minimumBufferSec = 10;
const minimumBufferPerLevelSec = 2;

export function bolaParameters(
  bitratesBps: readonly number[],
  maxBufferSec: number,
): { utilities: number[]; gp: number; v: number } {
  const utilities = bitratesBps.map((b) => Math.log(b / bitratesBps[0]!) + 1);
  const bufferTargetSec = Math.max(maxBufferSec, minimumBufferSec + minimumBufferPerLevelSec * bitratesBps.length);
  const gp = (utilities[utilities.length - 1]! - 1) / (bufferTargetSec / minimumBufferSec - 1);
  return { utilities, gp, v: minimumBufferSec / gp };
}

export function createBolaRule(): AbrRule {
  return {
    name: 'bola',
    choose(context: AbrContext): AbrDecision {
      if (context.bitratesBps.length === 1) return { index: 0, reason: 'bola: one rendition' };
      const { utilities, gp, v } = bolaParameters(context.bitratesBps, context.maxBufferSec);
      let best = 0;
      let bestScore = Number.NEGATIVE_INFINITY;
      context.bitratesBps.forEach((bitrate, i) => {
        const score = (v * (utilities[i]! + gp) - context.bufferSec) / bitrate;
        if (score >= bestScore) {
          bestScore = score;
          best = i;
        }
      });
      return {
        index: best,
        reason: `bola: buffer ${context.bufferSec.toFixed(1)} s maximises utility per bit at rendition ${best}`,
      };
    },
  };
}
