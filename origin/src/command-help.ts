/**
 * `@trickle/origin/command-help`: what the trickle CLI states in its help from this package (the config's defaults,
 * the policy names, the corpus's shapes) without the server, which a command loads when it runs.
 */
export { resolveConfig } from './config/config.js';
export { policyNames } from './delivery/catalogue.js';
export { corpusShapes } from './media/corpus.js';
