#!/usr/bin/env node
import "../dist/src/cli/aer1-verify-anchor.js";
