#!/usr/bin/env node
import "../dist/src/cli/aer1-anchord.js";
