export default { test: { exclude: ['**/node_modules/**', '.orchestrator/**', 'src/add.test.ts'] } }
