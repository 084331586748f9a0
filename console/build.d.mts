/** dist/console, where the console's build goes. */
export declare const CONSOLE_DIST: string
/** Whether dist/console is missing or older than its sources. */
export declare function isStale(): boolean
export declare function buildConsole(): Promise<void>
/** Builds when stale; answers whether it built. */
export declare function ensureConsoleBuilt(): Promise<boolean>
