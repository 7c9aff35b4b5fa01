/**
 * `@trickle/e2e/links`: the lab's named links (its profiles and the viewer populations it draws from), without the
 * lab: what a command line lists in its help before it brings a lab up.
 */
export { profiles, profileLink, type Profile } from './lab/profiles.js';
export { linkDistributions } from './lab/population.js';
