/**
 * head: a request whose head cannot be decided on is refused (400) before anything decides: a
 * path with dot segments or without a canonical form, a repeated Host or Authorization header
 * (decisions read the first of each; the forwarded raw list would carry every copy, issue 34).
 */
import { badRequest } from '../../errors.js';
import { hasDotSegments } from '../../http/route-table.js';
import { repeatedSingleHeader } from '../../proxy/headers.js';
import type { Stage } from '../stage.js';

export function headStage(): Stage {
  return {
    name: 'head',
    run(request) {
      if (hasDotSegments(request.rawPath)) throw badRequest('the path contains "." or ".." segments; send the normalised path');
      if (request.pathProblem !== undefined) throw badRequest(request.pathProblem);
      const repeated = repeatedSingleHeader(request.req.rawHeaders);
      if (repeated !== undefined) throw badRequest(`the request has more than one ${repeated === 'host' ? 'Host' : 'Authorization'} header; send exactly one`);
    },
  };
}
