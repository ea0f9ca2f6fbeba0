from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('capacity', '0002_plan_checks'),
    ]

    operations = [
        migrations.AddField(
            model_name='capacitysearch',
            name='stepping',
            field=models.BooleanField(default=False, help_text='a step is queued or running (one at a time)'),
        ),
        migrations.AddField(
            model_name='capacitysearch',
            name='changes',
            field=models.PositiveIntegerField(default=0, help_text='finished probes that can move the search'),
        ),
        migrations.AddField(
            model_name='capacitysearch',
            name='changes_seen',
            field=models.PositiveIntegerField(default=0, help_text='``changes`` when the last step began'),
        ),
        migrations.AlterField(
            model_name='capacitysearch',
            name='round',
            field=models.PositiveIntegerField(default=0, help_text='steps started; claimed with a conditional UPDATE'),
        ),
    ]
