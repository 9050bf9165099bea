// Where the project lives, so the CLI works from any current directory.
import * as path from 'node:path';

export const PROJECT_ROOT = path.resolve(__dirname, '..');
