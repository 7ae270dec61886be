import { createOnEvent } from 'nango';
import * as z from 'zod';

export default createOnEvent({
    event: 'post-connection-creation',
    description: 'Seeds the metadata of a new connection',
    metadata: z.object({ team: z.string().optional(), setupAt: z.string(), runs: z.number() }),
    exec: async (nango) => {
        await nango.setMetadata({ setupAt: new Date().toISOString(), runs: 0 });
        await nango.updateMetadata({ runs: 1 });
        await nango.log('connection set up', { level: 'info' });
    }
});
