import { createAction } from 'nango';
import crypto from 'crypto';
import * as z from 'zod';

const action = createAction({
    description: 'Describes the connection: its id, a hash of its metadata and the host of its API',
    version: '1.0.0',
    input: z.object({}),
    output: z.object({
        connectionId: z.string(),
        providerConfigKey: z.string(),
        metadataHash: z.string(),
        token: z.string(),
        host: z.string()
    }),
    metadata: z.object({ team: z.string().optional(), baseUrl: z.string().optional() }),

    exec: async (nango) => {
        const connection = await nango.getConnection();
        const metadata = await nango.getMetadata();
        const metadataHash = crypto.createHash('sha256').update(JSON.stringify(metadata ?? {})).digest('hex');
        const token = Buffer.from(`${connection.connection_id}:${connection.provider_config_key}`).toString('base64');
        const url = new URL('/v1/me', metadata?.baseUrl ?? 'https://api.example.com');
        url.searchParams.set('team', metadata?.team ?? 'none');
        return {
            connectionId: connection.connection_id,
            providerConfigKey: connection.provider_config_key,
            metadataHash,
            token,
            host: url.host
        };
    }
});

export default action;
