/** Contracts of site publishing (api/openapi/contract.ts). */
import { z } from 'zod';
import { isoDate, json, route } from '../../../openapi/contract.ts';
import { publishSiteSchema, subdomainSchema, updateSiteSchema } from './schema.ts';

const tags = ['Published sites'];

const site = z.strictObject({
  subdomain: z.string(),
  title: z.string(),
  url: z.string(),
  bytes: z.number().int().meta({ description: 'UTF-8 bytes of the html' }),
  etag: z.string(),
  created_at: isoDate,
  updated_at: isoDate,
});
const published = z.strictObject({ url: z.string(), ok: z.literal(true), site });
const subdomainParams = z.object({ subdomain: subdomainSchema });

export const siteContracts = [
  route({
    method: 'POST',
    path: '/deploy/site',
    summary: 'Publish a site at `<subdomain>.<SITE_DOMAIN>`',
    tags,
    access: 'caller',
    request: { body: publishSiteSchema },
    responses: { 201: json(published, 'Published') },
    errors: { 409: 'The subdomain is taken', 413: 'The html is larger than SITE_MAX_BYTES', 503: 'Sites are off' },
  }),
  route({
    method: 'GET',
    path: '/deploy/sites',
    summary: 'The caller’s sites',
    tags,
    access: 'caller',
    responses: { 200: json(z.strictObject({ sites: z.array(site) }), 'The sites') },
  }),
  route({
    method: 'PUT',
    path: '/deploy/site/:subdomain',
    summary: 'Replace a site’s html and/or title',
    tags,
    access: 'caller',
    request: { params: subdomainParams, body: updateSiteSchema },
    responses: { 200: json(published, 'Replaced') },
    errors: { 404: 'No such site of the caller’s', 413: 'The html is larger than SITE_MAX_BYTES' },
  }),
  route({
    method: 'DELETE',
    path: '/deploy/site/:subdomain',
    summary: 'Remove a site',
    tags,
    access: 'caller',
    request: { params: subdomainParams },
    responses: {
      200: json(z.strictObject({ subdomain: z.string(), ok: z.literal(true), deleted: z.literal(true) }), 'Removed'),
    },
    errors: { 404: 'No such site of the caller’s' },
  }),
];
