export default { test: { exclude: ['**/node_modules/**', '.orchestrator/**'] } }
