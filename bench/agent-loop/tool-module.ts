/** The benchmark's tools as an executor tool module (`--tools`), for an executor in a process of its own. */
import { noopTool } from './task.js';

export default [noopTool];
