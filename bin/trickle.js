#!/usr/bin/env node
// The checkout's `trickle` (npm start, scripts, tests, the images): the CLI package's own command.
import '../cli/bin/trickle.js';
