import { render } from 'preact';
import { App } from './app.tsx';
import { applyTheme, savedTheme } from './theme.ts';
import './styles.css';

applyTheme(savedTheme());
render(<App />, document.getElementById('app')!);
