/**
 * The template stage: Mustache templates for webhook bodies and e-mails, as a small language
 * of its own (README.md): parse (parse.ts), the view an event gives (view.ts), render
 * (render.ts), and the reason a rendered JSON body is not JSON (json-syntax.ts).
 */
export { jsonSyntaxProblem } from './json-syntax.js';
export { MAX_TEMPLATE_NESTING, templateSyntaxProblem } from './parse.js';
export { renderTemplate, templateModeForHttp, type TemplateRenderResult } from './render.js';
export { buildTemplateView } from './view.js';
