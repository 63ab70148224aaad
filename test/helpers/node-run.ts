// The fault harness (packages/faults) owns how the workspace's processes are run; the tests reuse it.
export {
  DIST_CONDITION,
  distIsFresh,
  nodeArgs,
  entryPoint,
  childEnv,
  cliArgs,
} from '@agent-reach/faults/processes';
